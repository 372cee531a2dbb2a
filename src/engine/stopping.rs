//! A stop that does not wait for the execution's thread.
//!
//! An execution notices `StopExecution` between two awaits; one evaluating a long expression
//! (JSONata stops one after 10 s), or looping through states that never wait, would notice it
//! only much later, while holding its thread. So the stop also reaches the execution from the
//! thread that learns of it (the store's watcher, or the one asking): it records the request
//! and fires the execution's [`Interrupt`], which cancels the evaluation running now and makes
//! every event the execution would write after it refused. The execution then ends ABORTED
//! with the events written before the stop, as AWS records a stop.

use crate::asl::jsonata::Interrupt;
use crate::store::{StopRequest, Store};
use std::sync::{Arc, Mutex};

/// One execution's stop, shared with the hook that fires it (and with its Map children).
#[derive(Debug, Default)]
pub struct Stopping {
    pub(crate) interrupt: Arc<Interrupt>,
    request: Mutex<Option<StopRequest>>,
    /// Wakes [`Stopping::requested`].
    stopped: tokio::sync::Notify,
}

impl Stopping {
    /// Whether the execution was told to stop.
    pub fn is_stopped(&self) -> bool {
        self.interrupt.is_fired()
    }

    /// The stop asked for, once [`Stopping::is_stopped`].
    pub(crate) fn request(&self) -> Option<StopRequest> {
        self.lock().clone()
    }

    /// Records `request` and stops the execution's evaluations; from any thread.
    pub(crate) fn stop(&self, request: StopRequest) {
        self.lock().get_or_insert(request);
        self.interrupt.fire();
        self.stopped.notify_waiters();
    }

    /// Resolves once the execution was told to stop, with the stop asked for.
    pub(crate) async fn requested(&self) -> StopRequest {
        loop {
            let notified = self.stopped.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if let Some(request) = self.request() {
                return request;
            }
            notified.await;
        }
    }

    /// A hook for [`Store::watch_execution_hooked`]: on every wake, reads whether a stop was
    /// asked for `execution_arn`, and stops the execution if so.
    pub(crate) fn hook(
        self: &Arc<Self>,
        store: &Arc<Store>,
        execution_arn: &str,
    ) -> crate::store::Hook {
        let (stopping, store, arn) = (self.clone(), store.clone(), execution_arn.to_owned());
        Arc::new(move || {
            if stopping.is_stopped() {
                return;
            }
            if let Ok(Some(request)) = store.stop_request(&arn) {
                stopping.stop(request);
            }
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<StopRequest>> {
        self.request.lock().unwrap_or_else(|p| p.into_inner())
    }
}
