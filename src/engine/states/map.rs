//! Map (inline): the item processor runs once per item, at most `MaxConcurrency` at a time
//! (AWS caps inline Maps at 40), and the outputs are collected in item order.

use crate::asl::error::{names, StatesError};
use crate::asl::model::{Dynamic, ItemSelector, Map, ProcessorMode, QueryLanguage, StateMachine};
use crate::engine::context::ExecutionInfo;
use crate::engine::execution::{
    Engine, Failed, StateCx, StatesData, Status, Step, MAX_PAYLOAD_BYTES,
};
use crate::engine::history::{
    Details, EventId, EventType, History, MemorySink, MAX_HISTORY_EVENTS,
};
use crate::engine::lanes::Lanes;
use crate::engine::map_journal::{IndexCursor, MapRunJournal};
use crate::engine::replay::{Lane, Recorded};
use crate::engine::retry::Retries;
use crate::engine::states::item_reader::Batcher;
use crate::engine::variables::Frame;
use crate::store::{MapRunExecution, MapRunSettings, NewMapRun};
use crate::tasks::s3::{read_items, write_results, ChildResult, ReaderRequest, WriterRequest};
use futures_util::stream::{FuturesUnordered, StreamExt};
use serde_json::{json, Value};
use std::cell::Cell;
use std::rc::Rc;
use std::sync::Arc;

/// AWS runs at most 40 iterations of an inline Map at once.
const INLINE_MAX_CONCURRENCY: usize = 40;

/// A distributed Map runs up to 10,000 child executions at once.
const DISTRIBUTED_MAX_CONCURRENCY: usize = 10_000;

impl Engine {
    /// Map: InputPath, then attempts under Retry, then Catch. AWS writes `MapStateFailed`
    /// only when the failure leaves the state: a retried attempt is followed directly by the
    /// next `MapStateStarted`.
    pub(crate) async fn map(
        &self,
        cx: &StateCx<'_>,
        m: &Map,
        input: Value,
    ) -> Result<Step, Failed> {
        // Borrowed: a Map's input can be large, and it was copied whole for InputPath.
        let effective = self.effective_input(cx, &m.io, &input)?;
        let mut retries = Retries::new(&m.errors.retry);
        // A retry's MapStateStarted points at the event that failed the previous attempt.
        let mut prev = cx.entered_id;
        loop {
            match self.map_attempt(cx, m, &input, &effective, prev).await {
                Ok((output, prev)) => {
                    return Ok(Step {
                        output,
                        next: m.transition,
                        prev,
                        no_exit_event: false,
                    })
                }
                Err(Attempt { failed, started }) => {
                    if let Some(delay) = retries.on_failure(&failed) {
                        prev = failed.prev;
                        self.retry_pause(delay).await;
                        continue;
                    }
                    let failed = if started && !failed.terminal {
                        let prev = self.push(failed.prev, EventType::MapStateFailed, None)?;
                        Failed { prev, ..failed }
                    } else {
                        failed
                    };
                    return self.catch(cx, &m.errors, &input, failed).await;
                }
            }
        }
    }

    async fn map_attempt(
        &self,
        cx: &StateCx<'_>,
        m: &Map,
        raw_input: &Value,
        effective: &Value,
        prev: EventId,
    ) -> Result<(Value, EventId), Attempt> {
        // JSONata: `Items` (or the input) must be an array; AWS writes EvaluationFailed then
        // MapStateFailed when it is not.
        let jsonata_failure = |failed: Failed| Attempt {
            failed,
            started: true,
        };
        if m.item_reader.is_some() && m.mode == ProcessorMode::Distributed {
            // The reader's items replace the input's: ItemsPath is not applied to them.
            return self
                .map_items(cx, m, Value::Array(Vec::new()), raw_input, effective, prev)
                .await;
        }
        if let Some(t) = &m.items {
            let data = StatesData::input(raw_input);
            let items = self
                .evaluate_jsonata(cx, data, |_| {}, t, "Items", Some("array"))
                .await
                .map_err(jsonata_failure)?;
            return self
                .map_items(cx, m, items, raw_input, effective, prev)
                .await;
        }
        if cx.state.query_language == QueryLanguage::Jsonata && !effective.is_array() {
            return Err(jsonata_failure(self.evaluation_failed(
                cx,
                None,
                &format!("Map state input must be an array but was: {effective}"),
            )));
        }
        let items = match &m.items_path {
            None => effective.clone(),
            Some(p) => self.required_path(cx, p, effective)?,
        };
        let Value::Array(items) = items else {
            return Err(self
                .state_error(
                    cx,
                    names::RUNTIME,
                    &format!(
                        "Invalid path '{}': The Map state's items must be an array, but the value is {}",
                        m.items_path.as_ref().map(|p| p.text()).unwrap_or("$"),
                        items
                    ),
                )
                .into());
        };
        self.map_items(cx, m, Value::Array(items), raw_input, effective, prev)
            .await
    }

    /// The Map once its items are known: MapStateStarted, the failure tolerance, the
    /// iterations (inline or distributed), the result.
    async fn map_items(
        &self,
        cx: &StateCx<'_>,
        m: &Map,
        items: Value,
        raw_input: &Value,
        effective: &Value,
        prev: EventId,
    ) -> Result<(Value, EventId), Attempt> {
        let Value::Array(items) = items else {
            return Err(self
                .state_error(cx, names::RUNTIME, "The Map state's items must be an array")
                .into());
        };
        let max_concurrency = self
            .resolve_count(
                cx,
                m.max_concurrency.as_ref(),
                effective,
                "MaxConcurrencyPath",
                0,
            )
            .await?
            .unwrap_or(0) as usize;
        let total = items.len();
        // Each iteration is a lane named after this attempt's MapStateStarted (see replay).
        let anchor = self.peek_key();
        let started = self.push(
            prev,
            EventType::MapStateStarted,
            Some(Details::new().int("length", total as i64).build()),
        )?;
        // AWS reads the failure tolerance once the state has started: a bad value fails the
        // execution right after MapStateStarted.
        let after_start = |e: Failed| Attempt {
            failed: Failed { prev: started, ..e },
            started: false,
        };
        let tolerated_count = self
            .tolerated_count(cx, m, effective)
            .await
            .map_err(after_start)?
            .map(|n| n as usize);
        let tolerated_percentage = self
            .tolerated_percentage(cx, m, effective)
            .await
            .map_err(after_start)?;
        let tolerance = Tolerance {
            count: tolerated_count,
            percentage: tolerated_percentage,
            total,
        };
        if m.mode == ProcessorMode::Distributed {
            let s3 = S3Plan {
                reader: self
                    .reader_request(cx, m, effective)
                    .await
                    .map_err(after_start)?,
                batcher: self.batcher(cx, m, effective).await.map_err(after_start)?,
                writer: self
                    .writer_request(cx, m, effective)
                    .await
                    .map_err(after_start)?,
            };
            return self
                .map_run(
                    cx,
                    m,
                    items,
                    raw_input,
                    effective,
                    started,
                    max_concurrency,
                    tolerance,
                    s3,
                )
                .await;
        }
        let limit = match max_concurrency {
            0 => INLINE_MAX_CONCURRENCY,
            n => n.min(INLINE_MAX_CONCURRENCY),
        };
        let last = Last {
            inner: Cell::new(started),
            iteration: Cell::new(started),
        };
        // Every iteration the concurrency allows starts before any runs (see engine::lanes).
        let mut running = Lanes::new(self, limit, total);
        let mut pending = items.into_iter().enumerate();
        // Starts iterations while the concurrency allows.
        macro_rules! start {
            () => {
                while running.len() < limit {
                    let Some((index, item)) = pending.next() else {
                        break;
                    };
                    let lane = Lane::child(&anchor, index);
                    let iteration = self.iteration(cx, m, index, item, effective, started, &last);
                    running.push(index, self.in_lane(lane, Box::pin(iteration)));
                }
            };
        }
        start!();
        let mut results = vec![Value::Null; total];
        let mut failures = 0usize;
        while let Some((_, (index, result))) = running.next().await {
            match result {
                Ok(output) => results[index] = output,
                Err(failed) if failed.terminal => return Err(failed.into()),
                Err(mut failed) => {
                    failures += 1;
                    if tolerance.exceeded(failures) {
                        // The running iterations are aborted (their events pointing at the
                        // failure); then the failed Task's own TaskStateAborted, as AWS
                        // orders them.
                        running.abort(failed.prev);
                        failed.wind_up(self)?;
                        let error = if tolerance.tolerant() {
                            tolerance.error()
                        } else {
                            failed.error
                        };
                        return Err(Attempt {
                            failed: Failed::new(error, failed.prev),
                            started: true,
                        });
                    }
                    results[index] = failed.error.to_error_output();
                }
            }
            start!();
        }
        drop(running);
        // AWS points both MapStateSucceeded and MapStateExited at the last iteration event.
        let prev = last.iteration.get();
        self.push(prev, EventType::MapStateSucceeded, None)?;
        let output = self
            .finish_result(cx, &m.io, raw_input.clone(), Value::Array(results))
            .await?;
        Ok((output, prev))
    }

    /// A distributed Map: the iterations run as child executions with histories of their own;
    /// this history records only `MapRunStarted` and `MapRunSucceeded`/`MapRunFailed`.
    #[allow(clippy::too_many_arguments)]
    async fn map_run(
        &self,
        cx: &StateCx<'_>,
        m: &Map,
        items: Vec<Value>,
        raw_input: &Value,
        effective: &Value,
        started: EventId,
        max_concurrency: usize,
        mut tolerance: Tolerance,
        s3: S3Plan,
    ) -> Result<(Value, EventId), Attempt> {
        let names = self.map_run_names(m);
        let earlier_runs = self.earlier_map_runs();
        let run_started =
            self.push_map_run_started(started, &names.map_run_arn, earlier_runs.len())?;
        // Children run tasks (effects) and are journaled under this event: it must be stored
        // first, or a resume would open a second run and not find them.
        self.commit_before_effects(cx).await?;
        // The run as the API shows it (DescribeMapRun...); a resumed run reopens its row and
        // keeps the settings UpdateMapRun gave it.
        let journal = self.map_runs.clone();
        if let Some(j) = &journal {
            let redriven = !earlier_runs.is_empty();
            j.run_started(self.new_map_run(&names, max_concurrency, &tolerance, redriven));
        }
        let batched = s3.batcher.is_some();
        let mut run = MapRun::new(self, m, names, run_started, journal, batched);
        run.keeping = match (&s3.writer, &run.journal) {
            (None, _) => Keeping::Outputs {
                drops_over_quota: output_holds_result(cx, m),
            },
            (Some(_), None) => Keeping::Records,
            (Some(_), Some(_)) => Keeping::Journal,
        };
        let inputs = self
            .map_run_inputs(cx, m, &run, items, &s3, effective)
            .await?;
        tolerance.total = inputs.len();
        let earlier = self.earlier_children(&run, &earlier_runs);
        let limit = concurrency_limit(max_concurrency);
        let Some(collected) = self
            .run_children(&run, inputs, limit, &mut tolerance, earlier)
            .await
        else {
            return Err(self.map_run_failed(&run, tolerance.error()));
        };
        let (result, written) = self
            .map_run_result(&run, s3.writer.as_ref(), collected)
            .await?;
        run.guard.end("SUCCEEDED", written);
        let run_done = self.push(run_started, EventType::MapRunSucceeded, None)?;
        self.push(run_done, EventType::MapStateSucceeded, None)?;
        let output = self
            .finish_result(cx, &m.io, raw_input.clone(), result)
            .await?;
        // AWS points MapStateExited at MapRunStarted (recordings since November 2024; older
        // ones point it at MapRunSucceeded, like MapStateSucceeded).
        Ok((output, run_started))
    }

    /// The names of the run about to start. A resumed run keeps the Map run ARN its
    /// MapRunStarted recorded (result files go under its run id); a new one gets a fresh id.
    fn map_run_names(&self, m: &Map) -> RunNames {
        let (region, account) = (&self.info.region, &self.info.account);
        let label = m
            .label
            .clone()
            .unwrap_or_else(|| crate::random::uuid().to_string());
        let child_machine_name = format!("{}/{label}", self.info.state_machine_name);
        let map_run_arn = self.recorded_map_run_arn().unwrap_or_else(|| {
            let id = crate::random::uuid();
            format!("arn:aws:states:{region}:{account}:mapRun:{child_machine_name}:{id}")
        });
        let run_id = map_run_arn
            .rsplit(':')
            .next()
            .unwrap_or_default()
            .to_owned();
        let child_machine_arn =
            format!("arn:aws:states:{region}:{account}:stateMachine:{child_machine_name}");
        RunNames {
            child_machine_name,
            child_machine_arn,
            map_run_arn,
            run_id,
        }
    }

    /// The Map runs this state started in the attempts a redrive cut away (their
    /// `MapRunStarted`/`MapRunRedriven` ids). A redrive that reaches a Map run the attempt
    /// before started redrives that run (`MapRunRedriven`, same ARN): its children that
    /// succeeded are not run again.
    fn earlier_map_runs(&self) -> Vec<EventId> {
        self.replay.as_ref().map_or(Vec::new(), |r| {
            r.superseded(&self.peek_key())
                .iter()
                .filter(is_run_event)
                .map(|e| e.id)
                .collect()
        })
    }

    /// `MapRunStarted`, or `MapRunRedriven` with how many runs came before it.
    fn push_map_run_started(
        &self,
        started: EventId,
        map_run_arn: &str,
        earlier_runs: usize,
    ) -> Result<EventId, Failed> {
        let details = Details::new().str("mapRunArn", map_run_arn);
        match earlier_runs {
            0 => self.push(started, EventType::MapRunStarted, Some(details.build())),
            n => {
                let details = details.int("redriveCount", n as i64).build();
                self.push(started, EventType::MapRunRedriven, Some(details))
            }
        }
    }

    /// The run's row in the store, started now.
    fn new_map_run(
        &self,
        names: &RunNames,
        max_concurrency: usize,
        tolerance: &Tolerance,
        redriven: bool,
    ) -> NewMapRun {
        NewMapRun {
            map_run_arn: names.map_run_arn.clone(),
            execution_arn: self.info.execution_arn.clone(),
            state_machine_arn: names.child_machine_arn.clone(),
            start_date_ms: self.clock.now(),
            max_concurrency: max_concurrency as i64,
            tolerated_failure_percentage: tolerance.percentage,
            tolerated_failure_count: tolerance.count.map(|c| c as i64),
            redriven_at_ms: redriven.then(|| self.clock.now()),
        }
    }

    /// The children's inputs: the items (or what the ItemReader reads) through ItemSelector,
    /// batched by the ItemBatcher; the run's row learns how many items and children it has.
    async fn map_run_inputs(
        &self,
        cx: &StateCx<'_>,
        m: &Map,
        run: &MapRun<'_>,
        items: Vec<Value>,
        s3: &S3Plan,
        effective: &Value,
    ) -> Result<Vec<Value>, Attempt> {
        let items = match &s3.reader {
            Some(request) => {
                let store = self.tasks.s3(&self.info.region);
                read_items(store.as_ref(), request)
                    .await
                    .map_err(|e| self.map_run_failed(run, e))?
            }
            None => items,
        };
        let mut inputs = Vec::with_capacity(items.len());
        for (index, item) in items.into_iter().enumerate() {
            // An ItemSelector that fails fails the state right after the run's start: no
            // MapRunFailed is written.
            let input = self
                .item_input(cx, m, index, item, effective)
                .await
                .map_err(|e| {
                    run.guard.end("FAILED", (0, 0));
                    let failed = Failed {
                        prev: run.started,
                        ..e
                    };
                    Attempt {
                        failed,
                        started: true,
                    }
                })?;
            inputs.push(input);
        }
        let item_total = inputs.len();
        if let Some(b) = &s3.batcher {
            inputs = b.batch(inputs);
        }
        if let Some(j) = &run.journal {
            j.run_sized(&run.names.map_run_arn, item_total, inputs.len());
        }
        Ok(inputs)
    }

    /// What the run knows of its children from before: the children that finished, which
    /// are not run again (on resume, or in a child run again after a crash, this run's; on a
    /// redrive, also those that succeeded in the runs it cut away), and their names.
    fn earlier_children(&self, run: &MapRun<'_>, earlier_runs: &[EventId]) -> EarlierChildren {
        let Some(journal) = &run.journal else {
            return EarlierChildren::none();
        };
        let names = journal.child_names(&run.names.map_run_arn);
        if self.replay.is_none() && !self.map_child {
            return EarlierChildren {
                names,
                ..EarlierChildren::none()
            };
        }
        EarlierChildren {
            this_run: journal.finished(&run.key),
            cut_away: earlier_runs
                .iter()
                .map(|id| journal.finished(&format!("{}/m{id}", self.lane_key())))
                .collect(),
            names,
        }
    }

    /// Runs the children, at most `limit` at once, and collects their ends; `None` when more
    /// of them failed than `tolerance` allows. UpdateMapRun may change the limit and the
    /// tolerance meanwhile: the run reads its row back now and then. (Only with a store: an
    /// engine without one may run without tokio's timer.)
    async fn run_children(
        &self,
        run: &MapRun<'_>,
        inputs: Vec<Value>,
        mut limit: usize,
        tolerance: &mut Tolerance,
        mut earlier: EarlierChildren,
    ) -> Option<Collected> {
        let mut collected = Collected::new(inputs.len(), run.keeping);
        let mut queue = inputs.into_iter().enumerate();
        let mut running = FuturesUnordered::new();
        let mut poll = run.journal.as_ref().map(|_| settings_poll());
        loop {
            while running.len() < limit {
                let Some((index, input)) = queue.next() else {
                    break;
                };
                let (done, name) = earlier.take(index);
                running.push(self.map_run_child(run, index, input, done, name));
            }
            if running.is_empty() {
                return Some(collected);
            }
            let next = match (&run.journal, poll.as_mut()) {
                (Some(j), Some(poll)) => tokio::select! {
                    next = running.next() => next,
                    _ = poll.tick() => {
                        if let Some(settings) = j.settings(&run.names.map_run_arn) {
                            limit = concurrency_limit(settings.max_concurrency.max(0) as usize);
                            tolerance.update(&settings);
                            if collected.failures > 0 && tolerance.exceeded(collected.failures) {
                                return None;
                            }
                        }
                        continue;
                    }
                },
                _ => running.next().await,
            };
            let Some((index, result, record)) = next else {
                return Some(collected);
            };
            if !collected.take(index, result, record, tolerance) {
                return None;
            }
        }
    }

    /// One child of the run: its execution, started now and followed in the run's journal,
    /// or its end as recorded when it finished before (`done`).
    async fn map_run_child(
        &self,
        run: &MapRun<'_>,
        index: usize,
        input: Value,
        done: Option<(ChildResult, bool)>,
        name: String,
    ) -> (usize, Result<Value, StatesError>, ChildResult) {
        if let Some((record, recorded_here)) = done {
            return self.reuse_child(run, index, record, recorded_here).await;
        }
        if let Some(j) = &run.journal {
            // Backpressure: the run's children get no further ahead of the store than this
            // (they all start at once when polled, so each waits its turn here).
            j.throttle().await;
        }
        let start = self.clock.now();
        let machine = &run.names.child_machine_name;
        let execution_arn = format!(
            "arn:aws:states:{}:{}:execution:{machine}:{name}",
            self.info.region, self.info.account
        );
        if let Some(j) = &run.journal {
            j.child_started(MapRunExecution {
                execution_arn: execution_arn.clone(),
                map_run_arn: run.names.map_run_arn.clone(),
                state_machine_arn: run.names.child_machine_arn.clone(),
                name: name.clone(),
                item_index: index as i64,
                item_count: items_held(run.batched, &input),
                status: "RUNNING".into(),
                start_date_ms: start,
                stop_date_ms: None,
                input: input.to_string(),
                output: None,
                error: None,
                cause: None,
            });
        }
        let key = format!("{}/{index}", run.key);
        let child = run.child.clone();
        let (result, status) = self
            .child_execution(child, machine, &name, key, input.clone())
            .await;
        let stop = self.clock.now();
        let record = ChildResult {
            execution_arn,
            name,
            input,
            result: result.clone(),
            start,
            stop,
        };
        if let Some(j) = &run.journal {
            j.child_ended(&record, status);
            j.record(&run.key, index, &record);
        }
        (index, result, record)
    }

    /// A child that finished in an earlier run of the execution: not run again. One taken
    /// from a run a redrive cut away (`recorded_here` false) is kept under this run too, where
    /// its ResultWriter (and a resume of this run) reads the run's children.
    async fn reuse_child(
        &self,
        run: &MapRun<'_>,
        index: usize,
        record: ChildResult,
        recorded_here: bool,
    ) -> (usize, Result<Value, StatesError>, ChildResult) {
        if let (false, Some(j)) = (recorded_here, &run.journal) {
            j.throttle().await;
            j.record(&run.key, index, &record);
        }
        (index, record.result.clone(), record)
    }

    /// The run's result, and how many items and children its ResultWriter wrote: the
    /// writer's answer when there is one, else the children's outputs in item order.
    async fn map_run_result(
        &self,
        run: &MapRun<'_>,
        writer: Option<&WriterRequest>,
        collected: Collected,
    ) -> Result<(Value, (i64, i64)), Attempt> {
        let Some(request) = writer else {
            if collected.over_quota {
                return Ok((over_quota_result(), (0, 0)));
            }
            return Ok((Value::Array(collected.results), (0, 0)));
        };
        let counted = Cell::new((0, 0));
        let count = |c: &ChildResult| {
            let (items, children) = counted.get();
            counted.set((items + items_held(run.batched, &c.input), children + 1));
        };
        let result = match (&run.journal, collected.keeping) {
            (Some(journal), Keeping::Journal) => {
                let lost = |e| StatesError::new(names::RESULT_WRITER_FAILED, e);
                journal.settle().await;
                // Read back a page at a time, in item order; a child missing from the store
                // fails the writer (the first error ends the writing).
                let mut recorded = journal.finished(&run.key);
                let children = (0..collected.total)
                    .map(move |i| {
                        recorded.take(i).ok_or_else(|| {
                            lost(format!(
                                "the record of child {i} of the Map run is not in the store"
                            ))
                        })
                    })
                    .inspect(|c| c.iter().for_each(count));
                self.write_results(run, request, children).await
            }
            _ => {
                let children = collected.children.into_iter().flatten();
                self.write_results(run, request, children.inspect(count).map(Ok))
                    .await
            }
        };
        let result = result.map_err(|e| self.map_run_failed(run, e))?;
        let written = match request.resource {
            Some(_) => counted.get(),
            None => (0, 0),
        };
        Ok((result, written))
    }

    /// [`write_results`] of this run's `children`.
    async fn write_results(
        &self,
        run: &MapRun<'_>,
        request: &WriterRequest,
        children: impl IntoIterator<Item = Result<ChildResult, StatesError>>,
    ) -> Result<Value, StatesError> {
        let store = self.tasks.s3(&self.info.region);
        let names = &run.names;
        write_results(
            store.as_ref(),
            request,
            &names.map_run_arn,
            &names.run_id,
            &names.child_machine_arn,
            children,
        )
        .await
    }

    /// Ends the run as failed with `error`: its row, then `MapRunFailed`.
    fn map_run_failed(&self, run: &MapRun<'_>, error: StatesError) -> Attempt {
        run.guard.end("FAILED", (0, 0));
        let details = Some(Details::new().error(&error).build());
        match self.push(run.started, EventType::MapRunFailed, details) {
            Ok(prev) => Attempt {
                failed: Failed::new(error, prev),
                started: true,
            },
            Err(failed) => failed.into(),
        }
    }

    /// The `mapRunArn` of the `MapRunStarted` about to be pushed, when resuming and it is
    /// recorded.
    fn recorded_map_run_arn(&self) -> Option<String> {
        let key = self.peek_key();
        // Recorded by this attempt, or by the attempt a redrive cut away.
        let recorded = self.recorded(&key).filter(is_run_event).or_else(|| {
            self.replay
                .as_ref()
                .and_then(|r| r.superseded(&key).iter().rev().find(is_run_event))
        })?;
        let arn = recorded.details.as_ref()?.get("mapRunArn")?.as_str()?;
        Some(arn.to_owned())
    }

    /// One child execution of a distributed Map, with its own history (kept with its run when
    /// there is a store) and context.
    /// Its callbacks and activities wait through the parent's token broker, keyed under
    /// `root_key`.
    async fn child_execution(
        &self,
        machine: Arc<StateMachine>,
        machine_name: &str,
        name: &str,
        root_key: String,
        input: Value,
    ) -> (Result<Value, StatesError>, &'static str) {
        let info = ExecutionInfo::new(
            &self.info.region,
            &self.info.account,
            machine_name,
            name,
            Some(&self.info.role_arn),
            self.clock.now(),
        );
        // With a store, the child's history is kept (GetExecutionHistory of a child, as on
        // AWS); without one (tests, `test`), it lives only while the child runs.
        let sink: Box<dyn crate::engine::history::HistorySink> = match &self.map_runs {
            Some(journal) => Box::new(journal.child_history(&info.execution_arn)),
            None => Box::new(MemorySink::default()),
        };
        let history = History::new(1, sink, MAX_HISTORY_EVENTS);
        let engine = Engine::new(
            machine,
            info,
            input,
            history,
            self.clock.clone(),
            self.tasks.clone(),
        )
        .into_map_child(
            self.tokens.clone(),
            self.map_runs.clone(),
            root_key,
            self.stopping.clone(),
        );
        let outcome = engine.run().await;
        let result = match outcome.status {
            Status::Succeeded => Ok(outcome.output.unwrap_or(Value::Null)),
            _ => Err(outcome.error.unwrap_or_else(StatesError::timeout)),
        };
        (result, outcome.status.as_str())
    }

    /// An item's input: ItemSelector (or legacy Parameters) with `$$.Map.Item`, or the item.
    pub(crate) async fn item_input(
        &self,
        cx: &StateCx<'_>,
        m: &Map,
        index: usize,
        item: Value,
        effective: &Value,
    ) -> Result<Value, Failed> {
        let selected = match &m.item_selector {
            Some(ItemSelector::JsonPath(t)) => {
                let item_cx = json!({"Index": index, "Value": item});
                self.template(cx, t, effective, "ItemSelector", |context| {
                    if let Value::Object(c) = context {
                        c.insert("Map".into(), json!({ "Item": item_cx }));
                    }
                })
            }
            Some(ItemSelector::Jsonata(t)) => {
                let item_cx = json!({"Index": index, "Value": item});
                let data = StatesData::input(effective);
                let extra = |context: &mut Value| {
                    if let Value::Object(c) = context {
                        c.insert("Map".into(), json!({ "Item": item_cx }));
                    }
                };
                self.evaluate_jsonata(cx, data, extra, t, "ItemSelector", None)
                    .await
            }
            None => return Ok(item),
        };
        self.within_depth(cx, selected?)
    }

    pub(crate) async fn tolerated_percentage(
        &self,
        cx: &StateCx<'_>,
        m: &Map,
        effective: &Value,
    ) -> Result<Option<f64>, Failed> {
        let value = match &m.tolerated_failure_percentage {
            None => return Ok(None),
            Some(Dynamic::Jsonata(t)) => {
                self.jsonata_number(cx, t, "ToleratedFailurePercentage", effective)
                    .await?
            }
            Some(Dynamic::Literal(p)) => *p,
            Some(Dynamic::Path(p)) => {
                let v = self
                    .with_env(cx, effective, |_| {}, |env| p.select(env))
                    .unwrap_or(Value::Null);
                // AWS also takes a number written as a string (a variable assigned "1").
                let f = v
                    .as_f64()
                    .or_else(|| v.as_str().and_then(|s| s.parse().ok()));
                match f {
                    Some(f) => f,
                    None => {
                        let shown = match &v {
                            Value::String(s) => s.clone(),
                            other => other.to_string(),
                        };
                        return Err(self.state_error(
                            cx,
                            names::RUNTIME,
                            &format!(
                                "The ToleratedFailurePercentagePath field refers to value \"{shown}\" which is not a valid float: {}",
                                p.text()
                            ),
                        ));
                    }
                }
            }
        };
        if !(0.0..=100.0).contains(&value) {
            return Err(self.state_error(
                cx,
                names::RUNTIME,
                "ToleratedFailurePercentage must be between 0 and 100.",
            ));
        }
        Ok(Some(value))
    }

    /// `ToleratedFailureCount(Path)`: a non-negative integer. A path naming a negative integer
    /// fails with AWS's own words for it ("ToleratedFailureCount cannot be negative."), anything
    /// else that is not an integer as `resolve_count` says.
    pub(crate) async fn tolerated_count(
        &self,
        cx: &StateCx<'_>,
        m: &Map,
        effective: &Value,
    ) -> Result<Option<u64>, Failed> {
        if let Some(Dynamic::Path(p)) = &m.tolerated_failure_count {
            let v = self.with_env(cx, effective, |_| {}, |env| p.select(env));
            // AWS also takes an integer written as a string (a variable assigned "-1").
            let n = v
                .as_ref()
                .and_then(|v| v.as_i64().or_else(|| v.as_str()?.parse::<i64>().ok()));
            if n.is_some_and(|n| n < 0) {
                return Err(self.state_error(
                    cx,
                    names::RUNTIME,
                    "ToleratedFailureCount cannot be negative.",
                ));
            }
        }
        self.resolve_count(
            cx,
            m.tolerated_failure_count.as_ref(),
            effective,
            "ToleratedFailureCountPath",
            0,
        )
        .await
    }

    /// One iteration: its input (ItemSelector with `$$.Map.Item`), its events, its scope.
    #[allow(clippy::too_many_arguments)]
    async fn iteration(
        &self,
        cx: &StateCx<'_>,
        m: &Map,
        index: usize,
        item: Value,
        effective: &Value,
        started: EventId,
        last: &Last,
    ) -> (usize, Result<Value, Failed>) {
        let result = async {
            let input = self.item_input(cx, m, index, item, effective).await?;
            let details = || iteration_details(&cx.state.name, index);
            // AWS points an iteration's start at the last event inside the iteration that
            // ended before it (or at MapStateStarted).
            let it_started = self.push(
                last.inner.get().max(started),
                EventType::MapIterationStarted,
                details(),
            )?;
            let guard = IterationGuard {
                engine: self,
                prev: it_started,
                name: &cx.state.name,
                index,
                armed: Cell::new(true),
            };
            let frame = Frame::child(cx.frame);
            let result = self.run_scope(&m.processor, input, it_started, frame).await;
            guard.armed.set(false);
            match result {
                Ok((output, prev)) => {
                    let id = self.push(prev, EventType::MapIterationSucceeded, details())?;
                    last.inner.set(prev);
                    last.iteration.set(id);
                    Ok(output)
                }
                Err(failed) if failed.terminal => Err(failed),
                Err(failed) => {
                    // AWS points whatever follows (MapStateFailed, the next attempt's
                    // MapStateStarted) at the iteration's failing event, not at this one.
                    let id = self.push(failed.prev, EventType::MapIterationFailed, details())?;
                    last.inner.set(failed.prev);
                    last.iteration.set(id);
                    Err(failed)
                }
            }
        }
        .await;
        (index, result)
    }
}

/// How many children a distributed Map runs at once for its `MaxConcurrency` (0: no limit).
fn concurrency_limit(max_concurrency: usize) -> usize {
    match max_concurrency {
        0 => DISTRIBUTED_MAX_CONCURRENCY,
        n => n.min(DISTRIBUTED_MAX_CONCURRENCY),
    }
}

/// How often a running Map run reads its settings back (UpdateMapRun).
const SETTINGS_POLL: std::time::Duration = std::time::Duration::from_millis(200);

/// The ticks at which a running Map run reads its settings back; a tick missed while the
/// run was busy is not made up for.
fn settings_poll() -> tokio::time::Interval {
    let mut poll = tokio::time::interval(SETTINGS_POLL);
    poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    poll
}

/// Whether a recorded event started a Map run (`MapRunStarted`, or `MapRunRedriven`).
fn is_run_event(e: &&Recorded) -> bool {
    e.event_type == EventType::MapRunStarted.as_str()
        || e.event_type == EventType::MapRunRedriven.as_str()
}

/// How many items a child's input holds: a batch (`ItemBatcher`) holds several.
fn items_held(batched: bool, input: &Value) -> i64 {
    match batched {
        true => input
            .get("Items")
            .and_then(Value::as_array)
            .map_or(1, |items| items.len() as i64),
        false => 1,
    }
}

/// The names of a distributed Map run and of the machine its children run.
struct RunNames {
    /// `MACHINE/LABEL`: the name of the machine the children run.
    child_machine_name: String,
    child_machine_arn: String,
    map_run_arn: String,
    /// The Map run ARN's last part: result files go under it.
    run_id: String,
}

/// A distributed Map run under way: what its steps share.
struct MapRun<'a> {
    names: RunNames,
    /// Its `MapRunStarted` (or `MapRunRedriven`) event.
    started: EventId,
    /// The run's name, which its children's keys extend (see [`MapRun::new`]).
    key: String,
    /// Where the run and its children are kept, with a store.
    journal: Option<Rc<MapRunJournal>>,
    /// The machine each child runs: the Map's ItemProcessor.
    child: Arc<StateMachine>,
    /// Whether each child holds a batch of items (`ItemBatcher`).
    batched: bool,
    /// What the run keeps of its children's ends until it ends.
    keeping: Keeping,
    guard: RunGuard<'a>,
}

impl<'a> MapRun<'a> {
    /// The run that `started`; from now on, dropped before it ends, it is marked ABORTED
    /// (the execution stopped, a sibling failed); every ending disarms that with its own
    /// status.
    fn new(
        engine: &'a Engine,
        m: &Map,
        names: RunNames,
        started: EventId,
        journal: Option<Rc<MapRunJournal>>,
        batched: bool,
    ) -> Self {
        let guard = RunGuard {
            journal: journal.clone(),
            map_run_arn: names.map_run_arn.clone(),
            clock: &*engine.clock,
            armed: Cell::new(true),
        };
        let child = Arc::new(StateMachine {
            comment: None,
            query_language: engine.machine.query_language,
            timeout_seconds: None,
            version: None,
            root: m.processor.clone(),
        });
        MapRun {
            // Named after this lane (unique in this engine, and itself named after its
            // engine's root) and its MapRunStarted: no two runs anywhere share a name, even
            // in a distributed Map nested inside another's child.
            key: format!("{}/m{started}", engine.lane_key()),
            names,
            started,
            journal,
            child,
            batched,
            keeping: Keeping::Outputs {
                drops_over_quota: false,
            },
            guard,
        }
    }
}

/// What a run knows of its children from before a crash or a redrive, read from its journal
/// as the run reaches each child (in item order).
struct EarlierChildren {
    /// The children of this run that finished.
    this_run: IndexCursor<ChildResult>,
    /// The children of the runs a redrive cut away (oldest first): those that succeeded are
    /// not run again.
    cut_away: Vec<IndexCursor<ChildResult>>,
    /// The children's names: a child run again keeps its execution's name.
    names: IndexCursor<String>,
}

impl EarlierChildren {
    /// Nothing from before (a run without a store).
    fn none() -> Self {
        EarlierChildren {
            this_run: IndexCursor::empty(),
            cut_away: Vec::new(),
            names: IndexCursor::empty(),
        }
    }

    /// Child `index`'s end, if it finished before (and whether under this run), and its name:
    /// its own, or a fresh one. Asked in increasing index order.
    fn take(&mut self, index: usize) -> (Option<(ChildResult, bool)>, String) {
        // The latest run a redrive cut away wins, as a later record replaces an earlier one.
        let cut_away = self
            .cut_away
            .iter_mut()
            .filter_map(|runs| runs.take(index))
            .filter(|child| child.result.is_ok())
            .last();
        let done = match self.this_run.take(index) {
            Some(child) => Some((child, true)),
            None => cut_away.map(|child| (child, false)),
        };
        let name = self
            .names
            .take(index)
            .unwrap_or_else(|| crate::random::uuid().to_string());
        (done, name)
    }
}

/// What a distributed Map run keeps of its children's ends until it ends.
#[derive(Debug, Clone, Copy)]
enum Keeping {
    /// Their outputs, for the state's result (no ResultWriter). With `drops_over_quota`, the
    /// output holds them whole (see [`output_holds_result`]), so they are let go once past
    /// AWS's payload quota: the state is sure to fail it.
    Outputs { drops_over_quota: bool },
    /// Their records, for a ResultWriter, when there is no store to read them back from.
    Records,
    /// Nothing: the ResultWriter reads their records back from the run's journal, where each
    /// was kept as it finished. A million of them are hundreds of megabytes.
    Journal,
}

/// The ends of a run's children so far.
struct Collected {
    keeping: Keeping,
    /// How many children the run has.
    total: usize,
    /// Each child's record, by item index ([`Keeping::Records`] only).
    children: Vec<Option<ChildResult>>,
    /// Each child's output (or error output), by item index ([`Keeping::Outputs`] only);
    /// emptied once `over_quota`.
    results: Vec<Value>,
    failures: usize,
    /// The JSON size of the results kept so far (counted when they are dropped over quota).
    results_bytes: usize,
    /// Whether the results passed the quota and were let go.
    over_quota: bool,
}

impl Collected {
    fn new(total: usize, keeping: Keeping) -> Self {
        Collected {
            keeping,
            total,
            children: match keeping {
                Keeping::Records => vec![None; total],
                _ => Vec::new(),
            },
            results: match keeping {
                Keeping::Outputs { .. } => vec![Value::Null; total],
                _ => Vec::new(),
            },
            failures: 0,
            results_bytes: 0,
            over_quota: false,
        }
    }

    /// Keeps child `index`'s output, or lets every result go once they pass the quota: then
    /// the run's memory is bounded by its concurrency, not its items.
    fn keep(&mut self, index: usize, output: Value) {
        let Keeping::Outputs { drops_over_quota } = self.keeping else {
            return;
        };
        if self.over_quota {
            return;
        }
        if drops_over_quota {
            // The array's brackets and commas: one byte per element is an upper bound.
            self.results_bytes += json_len(&output) + 1;
            if self.results_bytes > MAX_PAYLOAD_BYTES + 1 {
                self.over_quota = true;
                self.results = Vec::new();
                return;
            }
        }
        self.results[index] = output;
    }

    /// Takes child `index`'s end; false when its failure is one more than `tolerance`
    /// allows.
    fn take(
        &mut self,
        index: usize,
        result: Result<Value, StatesError>,
        record: ChildResult,
        tolerance: &Tolerance,
    ) -> bool {
        if let Some(slot) = self.children.get_mut(index) {
            *slot = Some(record);
        }
        match result {
            Ok(output) => self.keep(index, output),
            Err(error) => {
                self.failures += 1;
                if tolerance.exceeded(self.failures) {
                    return false;
                }
                self.keep(index, error.to_error_output());
            }
        }
        true
    }
}

/// Whether a distributed Map's output holds its results array whole: no ResultSelector,
/// Assign, OutputPath or Output reads it, and ResultPath keeps it. Results over AWS's payload
/// quota then make an output over it, whatever else the output holds.
fn output_holds_result(cx: &StateCx<'_>, m: &Map) -> bool {
    use crate::asl::model::OptionalPath;
    let io = &m.io;
    let reads_result = cx.state.assign.is_some()
        || match cx.state.query_language {
            QueryLanguage::Jsonata => io.output.is_some(),
            QueryLanguage::JsonPath => {
                io.result_selector.is_some()
                    || matches!(io.result_path, OptionalPath::Null)
                    || !matches!(io.output_path, OptionalPath::Default)
            }
        };
    !reads_result
}

/// A stand-in for results that passed AWS's payload quota and were let go: a string just over
/// the quota. Where the output holds the results whole ([`output_holds_result`]), it fails
/// the quota check at the same place, with the same error and events, as the array would.
fn over_quota_result() -> Value {
    Value::String("x".repeat(MAX_PAYLOAD_BYTES + 1))
}

/// The length of `value`'s compact JSON, without building it.
fn json_len(value: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// Records a Map run's end in the store once; dropped before that (the execution stopped, a
/// sibling failed), it records the run ABORTED.
struct RunGuard<'a> {
    journal: Option<Rc<MapRunJournal>>,
    map_run_arn: String,
    clock: &'a dyn crate::clock::Clock,
    armed: Cell<bool>,
}

impl RunGuard<'_> {
    fn end(&self, status: &str, written: (i64, i64)) {
        if self.armed.replace(false) {
            if let Some(j) = &self.journal {
                j.run_ended(&self.map_run_arn, status, self.clock.now(), written);
            }
        }
    }
}

impl Drop for RunGuard<'_> {
    fn drop(&mut self) {
        self.end("ABORTED", (0, 0));
    }
}

/// The details of an iteration's `MapIteration*` events.
fn iteration_details(name: &str, index: usize) -> Option<String> {
    Some(
        Details::new()
            .str("name", name)
            .int("index", index as i64)
            .build(),
    )
}

/// Writes `MapIterationAborted` when a running iteration is dropped. Its details are built
/// then: built up front, they were an allocation per iteration that almost never ran.
struct IterationGuard<'a> {
    engine: &'a Engine,
    prev: EventId,
    name: &'a str,
    index: usize,
    armed: Cell<bool>,
}

impl Drop for IterationGuard<'_> {
    fn drop(&mut self) {
        if self.armed.get() && !self.engine.cut_short.get() {
            let prev = self.engine.abort_link.get().unwrap_or(self.prev);
            let details = iteration_details(self.name, self.index);
            let _ = self
                .engine
                .push(prev, EventType::MapIterationAborted, details);
        }
    }
}

/// The last events of the iterations that ended so far, for `previousEventId`s.
struct Last {
    /// The last event inside an iteration (what its MapIteration* event points at).
    inner: Cell<EventId>,
    /// The last MapIteration* event.
    iteration: Cell<EventId>,
}

/// A failed attempt, and whether it got far enough for AWS to write `MapStateFailed`.
struct Attempt {
    failed: Failed,
    started: bool,
}

impl From<Failed> for Attempt {
    fn from(failed: Failed) -> Self {
        Attempt {
            failed,
            started: false,
        }
    }
}

/// A distributed Map's `ItemReader`, `ItemBatcher` and `ResultWriter`, resolved.
struct S3Plan {
    reader: Option<ReaderRequest>,
    batcher: Option<Batcher>,
    writer: Option<WriterRequest>,
}

/// `ToleratedFailureCount` and `ToleratedFailurePercentage` of one Map run.
pub(crate) struct Tolerance {
    pub(crate) count: Option<usize>,
    pub(crate) percentage: Option<f64>,
    pub(crate) total: usize,
}

impl Tolerance {
    pub(crate) fn tolerant(&self) -> bool {
        self.count.is_some() || self.percentage.is_some()
    }

    /// Whether `failures` failed items are more than the Map tolerates. With neither limit
    /// set, any failure is too many; with both, exceeding either fails the run (AWS docs,
    /// "Setting failure thresholds for Distributed Map states").
    pub(crate) fn exceeded(&self, failures: usize) -> bool {
        if !self.tolerant() {
            return failures > 0;
        }
        let over_count = self.count.is_some_and(|c| failures > c);
        let over_percentage = self
            .percentage
            .is_some_and(|p| self.total == 0 || failures as f64 * 100.0 / self.total as f64 > p);
        over_count || over_percentage
    }

    /// Takes the limits UpdateMapRun set (a negative count is none).
    fn update(&mut self, settings: &MapRunSettings) {
        self.count = settings.tolerated_failure_count.map(|c| c.max(0) as usize);
        self.percentage = settings.tolerated_failure_percentage;
    }

    pub(crate) fn error(&self) -> StatesError {
        StatesError::new(
            names::EXCEED_TOLERATED_FAILURE_THRESHOLD,
            "The specified tolerated failure threshold was exceeded",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::Tolerance;

    fn t(count: Option<usize>, percentage: Option<f64>, total: usize) -> Tolerance {
        Tolerance {
            count,
            percentage,
            total,
        }
    }

    #[test]
    fn without_limits_any_failure_is_too_many() {
        assert!(!t(None, None, 4).exceeded(0));
        assert!(t(None, None, 4).exceeded(1));
    }

    #[test]
    fn a_set_limit_alone_decides() {
        assert!(!t(Some(2), None, 10).exceeded(2));
        assert!(t(Some(2), None, 10).exceeded(3));
        assert!(!t(None, Some(50.0), 10).exceeded(5));
        assert!(t(None, Some(50.0), 10).exceeded(6));
        // An explicit zero tolerates nothing.
        assert!(t(Some(0), None, 10).exceeded(1));
    }

    #[test]
    fn with_both_limits_exceeding_either_fails() {
        assert!(t(Some(5), Some(10.0), 10).exceeded(2));
        assert!(t(Some(1), Some(90.0), 10).exceeded(2));
        assert!(!t(Some(3), Some(30.0), 10).exceeded(3));
    }
}
