//! The npm package's TypeScript declarations (`npm/sfn-local/index.d.ts`) accept the code its
//! users copy (#37): every `js` block of the package's README and the examples' suites and
//! configurations are type-checked against them with `tsc --noEmit` (TypeScript from
//! `.ci/deps`), as ts-jest's default type checking and an editor do.
//!
//! Regression (#37): the README's own pattern, `waitForTaskToken(connect(), ...)`, was a
//! TS2345 error, so `tsc` and ts-jest failed on a project that followed it.

mod common;

use common::deps_node_modules;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Names the README's blocks share (a block uses `sfn` from the one before), and Jest's
/// globals as `@jest/globals` types them.
const PRELUDE: &str = r#"// @ts-check
/** @type {import("@aws-sdk/client-sfn").SFNClient} */
const sfn = /** @type {any} */ (undefined);
"#;

const JEST_GLOBALS: &str = r#"declare const test: typeof import("@jest/globals").test;
declare const expect: typeof import("@jest/globals").expect;
declare const describe: typeof import("@jest/globals").describe;
declare const beforeAll: typeof import("@jest/globals").beforeAll;
declare const afterAll: typeof import("@jest/globals").afterAll;
"#;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The `js` code blocks of a Markdown file.
fn js_blocks(markdown: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in markdown.lines() {
        match (&mut current, line.trim_start()) {
            (None, l) if l == "```js" || l == "```javascript" => current = Some(String::new()),
            (Some(block), "```") => {
                blocks.push(std::mem::take(block));
                current = None;
            }
            (Some(block), _) => {
                block.push_str(line);
                block.push('\n');
            }
            _ => {}
        }
    }
    blocks
}

/// The project `tsc` checks: the README's blocks (each in an async function, for its top-level
/// `await`) and copies of the examples, `sfn-local` resolved to the package's folder.
fn project(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let readme = std::fs::read_to_string(root().join("npm/sfn-local/README.md")).unwrap();
    for (i, block) in js_blocks(&readme).iter().enumerate() {
        let file = dir.join(format!("readme-{i}.js"));
        std::fs::write(&file, format!("{PRELUDE}(async () => {{\n{block}}})();\n")).unwrap();
        files.push(file);
    }
    for example in [
        "npm/example/approval.test.js",
        "npm/example/jest.config.js",
        "tests/sam_app/orders.test.js",
        "tests/sam_app/jest.config.js",
    ] {
        let name = example.replace('/', "-");
        let file = dir.join(name);
        let code = std::fs::read_to_string(root().join(example)).unwrap();
        std::fs::write(&file, format!("// @ts-check\n{code}")).unwrap();
        files.push(file);
    }
    let globals = dir.join("jest-globals.d.ts");
    std::fs::write(&globals, JEST_GLOBALS).unwrap();
    files.push(globals);
    files
}

/// Runs `tsc --noEmit` (strict, JavaScript checked) over `files` in `dir`, `sfn-local`
/// resolved to the package's folder; returns whether it passed and what it said.
fn tsc(dir: &Path, files: &[PathBuf]) -> (bool, String) {
    let modules = deps_node_modules();
    let config = serde_json::json!({
        "compilerOptions": {
            "allowJs": true, "checkJs": true, "noEmit": true, "strict": true,
            "target": "es2022", "module": "commonjs", "moduleResolution": "node10",
            "types": ["node"], "typeRoots": [modules.join("@types")], "skipLibCheck": true,
            "baseUrl": ".",
            "paths": {"sfn-local": [root().join("npm/sfn-local")], "*": [modules.join("*")]}
        },
        "files": files,
    });
    std::fs::write(dir.join("tsconfig.json"), config.to_string()).unwrap();
    let tsc = Command::new("node")
        .arg(modules.join("typescript/bin/tsc"))
        .args(["--project", "tsconfig.json", "--pretty", "false"])
        .current_dir(dir)
        .output()
        .expect("run tsc");
    let said = common::said(&tsc);
    (tsc.status.success(), said)
}

#[test]
fn the_declarations_type_check_the_readmes_and_the_examples_code() {
    let dir = tempfile::tempdir().unwrap();
    let files = project(dir.path());
    let (passed, said) = tsc(dir.path(), &files);
    assert!(passed, "tsc --noEmit:\n{said}");
    assert!(files.len() >= 6, "{files:?}");
}

// Regression (#49): the helpers returned `Promise<any>`, so a misspelt field of a finished
// execution (`done.stauts`) compiled, and the test failed only when it ran.
#[test]
fn a_misspelt_field_of_a_finished_execution_does_not_compile() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, body: &str| {
        let file = dir.path().join(name);
        let code = format!(
            "{PRELUDE}const {{ startAndWait, waitForExecution }} = require(\"sfn-local\");\n(async () => {{\n{body}}})();\n"
        );
        std::fs::write(&file, code).unwrap();
        file
    };
    let good = write(
        "good.js",
        r#"const done = await startAndWait(sfn, "arn", {});
/** @type {string | undefined} */
const status = done.status;
/** @type {Date | undefined} */
const stopped = done.stopDate;
const total = done.outputJson.total;
const again = await waitForExecution(sfn, done.executionArn);
console.log(status, stopped, total, again.output);
"#,
    );
    let bad = write(
        "bad.js",
        "const done = await startAndWait(sfn, \"arn\", {});\nconsole.log(done.stauts);\n",
    );
    let (passed, said) = tsc(dir.path(), &[good, bad]);
    assert!(!passed, "tsc accepted done.stauts:\n{said}");
    assert!(
        said.contains("bad.js(")
            && said.contains("Property 'stauts' does not exist")
            && said.contains("Did you mean 'status'?"),
        "{said}"
    );
    assert!(!said.contains("good.js("), "{said}");
}
