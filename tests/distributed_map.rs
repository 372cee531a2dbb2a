//! Distributed Maps through the binary: callbacks inside child executions, answered by
//! `--task` workers from other processes.

mod common;

use common::Sandbox;
use serde_json::{json, Value};

/// A distributed Map's processor whose only state is `state`, named `name`.
fn processor(name: &str, state: Value) -> Value {
    json!({
        "ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"},
        "StartAt": name,
        "States": {name: state}
    })
}

// Regression: the children of a distributed Map nested in another's children were keyed
// alike in every outer child, so the second grandchild found the first one's token and took
// its answer.
#[test]
fn nested_distributed_maps_give_every_grandchild_its_own_token() {
    let sb = Sandbox::new();
    let worker = sb.write(
        "answer.sh",
        "#!/bin/sh\nn=$(jq .MessageBody.n)\n\
         \"$SFN_LOCAL\" send-task-success --task-token \"$SFN_TASK_TOKEN\" --task-output \"{\\\"n\\\": $n}\"\n",
    );
    let _ = std::process::Command::new("chmod")
        .arg("+x")
        .arg(&worker)
        .status();
    let ask = json!({"Type": "Task",
        "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
        "Parameters": {"MessageBody": {"token.$": "$$.Task.Token", "n.$": "$.n"}},
        "TimeoutSeconds": 30, "End": true});
    let inner_map = json!({"Type": "Map", "ItemsPath": "$.inner", "End": true,
        "ItemProcessor": processor("Ask", ask)});
    let machine = json!({"StartAt": "Outer", "States": {"Outer": {
        "Type": "Map", "ItemsPath": "$.outer", "End": true,
        "ItemProcessor": processor("Inner", inner_map)}}});
    let def = sb.write("nested.asl.json", &machine.to_string());
    let input = json!({"outer": [{"inner": [{"n": 1}]}, {"inner": [{"n": 2}]}]}).to_string();
    let bin = common::bin().display().to_string();
    let out = sb.run_env(
        &[
            "run",
            def.to_str().expect("path"),
            "--input",
            &input,
            "--task",
            &format!("Ask={}", worker.display()),
        ],
        &[("SFN_LOCAL", &bin)],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.json(), json!([[{"n": 1}], [{"n": 2}]]));
    let issued = out.stderr.matches("issued task token").count();
    assert_eq!(issued, 2, "{}", out.stderr);
}

/// 4 KiB of text that does not compress: history chunks of 2 KiB or more are stored
/// LZ4-compressed, and a result of one repeated letter would leave the database (and the page
/// caches these tests' baselines fill) a hundred times smaller than a real one.
fn big_result() -> String {
    let mut letters = fastrand::Rng::with_seed(7);
    (0..4096).map(|_| letters.lowercase()).collect()
}

/// A distributed Map whose Pass child returns 4 KiB each, with `extra` fields on the Map
/// state.
fn big_results_machine(extra: Value) -> Value {
    let child = json!({"Type": "Pass", "Result": big_result(), "End": true});
    let mut map = json!({"Type": "Map", "ItemsPath": "$.items", "End": true,
        "ItemProcessor": processor("Big", child)});
    map.as_object_mut()
        .expect("object")
        .extend(extra.as_object().expect("object").clone());
    json!({"StartAt": "Fan out", "States": {"Fan out": map}})
}

// Regression (#38): a distributed Map without a ResultWriter held every child's result to the
// end, so its memory grew with its items (hundreds of MB for a million), though an output that
// holds the results whole was sure to fail AWS's payload quota. Past the quota they are let go;
// the execution fails exactly as it did (the same events, error and cause).
#[test]
fn results_past_the_payload_quota_are_let_go_and_fail_the_same() {
    let sb = Sandbox::new();
    let input = json!({"items": (0..3000).collect::<Vec<_>>()}).to_string();
    let mut runs = Vec::new();
    // `"OutputPath": "$"` selects the same output, but the engine cannot know the output holds
    // the results whole, so it keeps them: the baseline.
    for (name, extra) in [
        ("lets-go", json!({})),
        ("keeps", json!({"OutputPath": "$"})),
    ] {
        let def = sb.write(
            &format!("{name}.asl.json"),
            &big_results_machine(extra).to_string(),
        );
        let db = sb.path(&format!("{name}.db")).display().to_string();
        let args = ["run", def.to_str().expect("path"), "--input", &input];
        let (out, peak_mib) =
            sb.run_measured(&[&args[..], &["--name", name, "--db", &db]].concat());
        out.assert_error(1, "States.DataLimitExceeded");
        let history = sb.run(&[
            "get-execution-history",
            "--execution-arn",
            name,
            "--db",
            &db,
        ]);
        assert_eq!(history.code, 0, "{}", history.stderr);
        let events = history.json()["events"].clone();
        let shape: Vec<(Value, Value)> = events
            .as_array()
            .expect("events")
            .iter()
            .map(|e| (e["type"].clone(), e["previousEventId"].clone()))
            .collect();
        let failed = events[events.as_array().expect("events").len() - 1]
            ["executionFailedEventDetails"]
            .clone();
        runs.push((shape, failed, peak_mib));
    }
    let (kept, let_go) = (runs.pop().expect("keeps"), runs.pop().expect("lets go"));
    assert_eq!(let_go.0, kept.0, "the events differ");
    assert_eq!(let_go.1, kept.1, "the failure differs");
    assert_eq!(let_go.1["error"], "States.DataLimitExceeded");
    // 3,000 results of 4 KiB: 12 MiB held by the baseline.
    eprintln!("peak: {} MiB letting go, {} MiB keeping", let_go.2, kept.2);
    assert!(
        let_go.2 + 8 <= kept.2,
        "letting go peaked at {} MiB, keeping at {} MiB",
        let_go.2,
        kept.2
    );
}

// Regression (#38): a distributed Map with a ResultWriter held every child's record and output
// to the end, then built its result files whole in memory: its memory grew with its items.
// Now the records are read back from the store and the files written as they come.
#[test]
fn a_result_writer_holds_no_child_records_in_memory() {
    let sb = Sandbox::new();
    let s3 = sb.path("s3");
    // JSON lines, read one at a time: this process stays small, and what a test process holds
    // when it starts another counts in that one's peak (Linux carries it across exec).
    let writer = json!({"MaxConcurrency": 10, "ResultWriter": {
        "Resource": "arn:aws:states:::s3:putObject",
        "Parameters": {"Bucket": "out", "Prefix": "runs"},
        "WriterConfig": {"OutputType": "JSONL"}}});
    let def = sb.write("writer.asl.json", &big_results_machine(writer).to_string());
    let mut peaks = Vec::new();
    for items in [1000, 4000] {
        let input = json!({"items": (0..items).collect::<Vec<_>>()}).to_string();
        let (name, db) = (format!("w{items}"), sb.path(&format!("w{items}.db")));
        let args = [
            "run",
            def.to_str().expect("path"),
            "--input",
            &input,
            "--name",
            &name,
            "--db",
            db.to_str().expect("path"),
            "--s3-dir",
            s3.to_str().expect("path"),
        ];
        let (out, peak_mib) = sb.run_measured(&args);
        assert_eq!(out.code, 0, "{}", out.stderr);
        let read = |key: &str| std::fs::read(s3.join("out").join(key)).expect("written");
        let key = out.json()["ResultWriterDetails"]["Key"].clone();
        let manifest: Value =
            serde_json::from_slice(&read(key.as_str().expect("key"))).expect("JSON");
        let listed = &manifest["ResultFiles"]["SUCCEEDED"][0];
        let file = read(listed["Key"].as_str().expect("key"));
        assert_eq!(listed["Size"], json!(file.len()));
        let output = json!(json!(big_result()).to_string());
        let mut lines = 0;
        for (index, line) in file
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .enumerate()
        {
            let entry: Value = serde_json::from_slice(line).expect("a JSON line");
            assert_eq!(entry["Input"], json!(index.to_string()));
            assert_eq!(entry["Output"], output);
            lines += 1;
        }
        assert_eq!(lines, items);
        peaks.push(peak_mib);
    }
    // 3,000 more children of 4 KiB: 12 MiB for each copy the run would hold. (A thousand
    // children already fill SQLite's page caches, which the database's size would grow.)
    eprintln!(
        "peak: {} MiB for 1,000 children, {} MiB for 4,000",
        peaks[0], peaks[1]
    );
    assert!(
        peaks[1] <= peaks[0] + 8,
        "4,000 children peaked at {} MiB, 1,000 at {} MiB",
        peaks[1],
        peaks[0]
    );
}

/// Runs a distributed Map of `items` children (each returning 4 KiB, written by a
/// ResultWriter) until all but the last have finished, kills it, and resumes it; the resume's
/// peak memory in MiB.
fn resumed_map_peak(items: usize) -> i64 {
    let sb = Sandbox::new().lease_ms(300);
    let s3 = sb.path("s3").display().to_string();
    // The last child lingers 3 s: the run is killed then, its other children finished (the
    // test sees that within 20 ms; the rest is a margin for a loaded machine).
    let child = json!({"StartAt": "Last?", "States": {
        "Last?": {"Type": "Choice", "Default": "Big",
            "Choices": [{"Variable": "$", "NumericEquals": items - 1, "Next": "Linger"}]},
        "Linger": {"Type": "Wait", "Seconds": 3, "Next": "Big"},
        "Big": {"Type": "Pass", "Result": big_result(), "End": true}}});
    let machine = json!({"StartAt": "Fan out", "States": {"Fan out": {
        "Type": "Map", "ItemsPath": "$.items", "MaxConcurrency": 10, "End": true,
        "ResultWriter": {"Resource": "arn:aws:states:::s3:putObject",
            "Parameters": {"Bucket": "out", "Prefix": "runs"}},
        "ItemProcessor": {
            "ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"},
            "StartAt": "Last?", "States": child["States"]}}}});
    let def = sb.write("m.asl.json", &machine.to_string());
    let input = json!({"items": (0..items).collect::<Vec<_>>()}).to_string();
    let args = [
        "run",
        def.to_str().expect("path"),
        "--name",
        "r",
        "--input",
        &input,
    ];
    let mut run = sb.spawn(&[&args[..], &["--s3-dir", &s3]].concat());
    let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let finished: i64 = rusqlite::Connection::open(sb.db())
            .and_then(|c| c.query_row("SELECT COUNT(*) FROM map_run_children", [], |r| r.get(0)))
            .unwrap_or(0);
        if finished as usize == items - 1 {
            break;
        }
        assert!(
            std::time::Instant::now() < until,
            "{finished} children finished"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    common::kill(&mut run);
    std::thread::sleep(std::time::Duration::from_millis(400));
    let (out, peak_mib) = sb.run_measured(&["resume", "--execution-arn", "r"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let described = sb.run(&["describe-execution", "--execution-arn", "r"]);
    assert_eq!(
        described.json()["status"],
        "SUCCEEDED",
        "{}",
        described.stdout
    );
    peak_mib
}

// Regression (#38): a resumed (or redriven) distributed Map read every finished child's record
// and every child's name into memory before its first child: a resumed run of a million held
// them all. They are read a page at a time as the run reaches each child.
#[test]
fn a_resumed_map_run_reads_its_finished_children_as_it_goes() {
    let (few, many) = (resumed_map_peak(1000), resumed_map_peak(4000));
    eprintln!("resume peak: {few} MiB for 1,000 children, {many} MiB for 4,000");
    assert!(
        many <= few + 8,
        "resuming 4,000 children peaked at {many} MiB, 1,000 at {few} MiB"
    );
}

// Regression: listing a local S3 folder (`s3:listObjectsV2` ItemReader) read each object whole
// to take its ETag, so a 256 MiB object cost 256 MiB of memory. It is read a buffer at a time.
#[test]
fn listing_a_large_object_does_not_read_it_into_memory() {
    let sb = Sandbox::new();
    let bucket = sb.path("s3").join("big");
    std::fs::create_dir_all(&bucket).expect("bucket");
    let object = std::fs::File::create(bucket.join("blob.bin")).expect("object");
    object.set_len(256 << 20).expect("a sparse 256 MiB file");
    let machine = json!({"StartAt": "Each", "States": {"Each": {"Type": "Map", "End": true,
        "ItemReader": {"Resource": "arn:aws:states:::s3:listObjectsV2",
            "Parameters": {"Bucket": "big"}},
        "ItemProcessor": processor("Size", json!({"Type": "Pass", "OutputPath": "$.Size", "End": true}))}}});
    let def = sb.write("list.asl.json", &machine.to_string());
    let s3 = sb.path("s3");
    let (out, peak_mib) = sb.run_measured(&[
        "run",
        def.to_str().expect("path"),
        "--s3-dir",
        s3.to_str().expect("path"),
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.json(), json!([256 << 20]));
    assert!(
        peak_mib < 128,
        "listing a 256 MiB object peaked at {peak_mib} MiB"
    );
}
