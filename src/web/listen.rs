//! The connection loop of the HTTP faces: hyper's HTTP/1 server with the timeouts and the
//! connection cap that `axum::serve` does not have.
//!
//! - Head: hyper's `header_read_timeout` runs whenever a connection waits for a request's
//!   head, so it closes both a half-sent request (slowloris) and an idle keep-alive
//!   connection.
//! - Body: [`DeadlineBody`] fails a body still arriving after the body timeout (tower-http's
//!   `RequestBodyTimeout` restarts its clock at every frame, so a client sending a byte now
//!   and then would never be cut off; this deadline is for the whole body).
//! - Cap: at most `max_connections` are served at once; the next ones wait in the listen
//!   backlog until one closes, and the log says so once each time the cap is reached.

use super::hosts::{check_host, HostGuard};
use super::{log, WebOptions};
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::middleware::{from_fn_with_state, Next};
use axum::response::Response;
use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

/// How long a stopping server waits for requests in flight (long polls answer at once when
/// the server stops, so this only bounds a stuck client).
const DRAIN_TIMEOUT: Duration = Duration::from_secs(15);

/// Serves `app` on `listener`, guarded as `options` say, until `shutdown` resolves; then
/// stops accepting and lets the requests in flight finish.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    options: &WebOptions,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let app = guarded(app, options);
    let permits = Arc::new(Semaphore::new(options.max_connections.max(1)));
    let graceful = GracefulShutdown::new();
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(options.header_timeout);
    let mut shutdown = std::pin::pin!(shutdown);
    // Said once each time the cap is reached, not once per waiting connection.
    let mut at_cap = false;
    loop {
        let permit = match permits.clone().try_acquire_owned() {
            Ok(permit) => {
                at_cap = false;
                permit
            }
            Err(_) => {
                if !at_cap {
                    at_cap = true;
                    log(options.name, &format!(
                        "{} connections are open, the most --max-connections allows: new connections wait until one closes",
                        options.max_connections
                    ));
                }
                tokio::select! {
                    permit = permits.clone().acquire_owned() => match permit {
                        Ok(permit) => permit,
                        Err(_) => break,
                    },
                    _ = &mut shutdown => break,
                }
            }
        };
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    accept_failed(options.name, e).await;
                    continue;
                }
            },
            _ = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let service = TowerToHyperService::new(app.clone());
        let connection = graceful.watch(builder.serve_connection(TokioIo::new(stream), service));
        tokio::spawn(async move {
            // A connection's errors (a timeout, a reset) are the client's: nothing to report.
            let _ = connection.await;
            drop(permit);
        });
    }
    drop(listener);
    let _ = tokio::time::timeout(DRAIN_TIMEOUT, graceful.shutdown()).await;
    Ok(())
}

/// An `accept` that failed: a connection reset before it was taken is nothing; running out
/// of file descriptors is reported, and the loop pauses instead of spinning.
async fn accept_failed(name: &str, e: std::io::Error) {
    use std::io::ErrorKind::*;
    if matches!(
        e.kind(),
        ConnectionAborted | ConnectionReset | ConnectionRefused
    ) {
        return;
    }
    log(name, &format!("cannot accept a connection: {e}"));
    tokio::time::sleep(Duration::from_millis(500)).await;
}

/// `app` behind the `Host` check and the body deadline.
fn guarded(app: Router, options: &WebOptions) -> Router {
    let guard = HostGuard::new(options.hosts.clone(), options.name);
    app.layer(from_fn_with_state(options.body_timeout, limit_body_time))
        .layer(from_fn_with_state(guard, check_host))
}

/// The middleware that gives each request's body its deadline.
async fn limit_body_time(
    State(timeout): State<Duration>,
    request: Request,
    next: Next,
) -> Response {
    let (parts, body) = request.into_parts();
    let body = Body::new(DeadlineBody {
        inner: body,
        deadline: Box::pin(tokio::time::sleep(timeout)),
        timeout,
    });
    next.run(Request::from_parts(parts, body)).await
}

/// A request body that fails once its deadline has passed.
pub struct DeadlineBody {
    inner: Body,
    deadline: Pin<Box<tokio::time::Sleep>>,
    timeout: Duration,
}

/// A body that did not arrive in time.
#[derive(Debug, thiserror::Error)]
#[error("the request body did not arrive within {} s (--body-timeout)", .0.as_secs_f64())]
pub struct BodyTimedOut(Duration);

impl http_body::Body for DeadlineBody {
    type Data = Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
        if self.deadline.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Some(Err(BodyTimedOut(self.timeout).into())));
        }
        Pin::new(&mut self.inner)
            .poll_frame(cx)
            .map_err(axum::BoxError::from)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}
