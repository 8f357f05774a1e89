//! What every listener of the process does the same way, since anyone who reaches it may send
//! anything: accepting connections with a back-off when that fails (out of file descriptors,
//! EMFILE, fails at once and again until one is freed), and a deadline on each request's whole
//! life, so a client that never reads its answers loses its own connection and nothing else.

use std::{
    io,
    net::SocketAddr,
    pin::Pin,
    sync::Arc,
    task::{Context, Poll, ready},
    time::Duration,
};

use http_body_util::Full;
use hyper::{
    body::{Bytes, Incoming},
    server::conn::http1,
    service::HttpService,
};
use hyper_util::rt::TokioIo;
use prometheus_client::metrics::counter::Counter;
use tokio::{
    io::{AsyncRead, AsyncWrite, ReadBuf},
    net::{TcpListener, TcpStream},
    sync::Semaphore,
    time::{Instant, Sleep},
};

use crate::duration::spoken;

/// The first wait after a failed accept; it doubles with each failure in a row.
const FIRST_BACK_OFF: Duration = Duration::from_millis(5);
/// The longest wait between two accepts.
const LONGEST_BACK_OFF: Duration = Duration::from_secs(1);

/// Accepts the connections of one listener, backing off while accepting fails.
pub struct Acceptor {
    listener: TcpListener,
    /// Names the listener in logs: `wake-up backend`, `HTTP`.
    name: &'static str,
    failures: Counter,
    in_a_row: u32,
}

impl Acceptor {
    /// `failures` counts each accept that failed.
    pub fn new(listener: TcpListener, name: &'static str, failures: Counter) -> Self {
        Self {
            listener,
            name,
            failures,
            in_a_row: 0,
        }
    }

    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// The next connection and its peer. A burst of failures is logged once, when it starts,
    /// and once more when accepting works again.
    pub async fn accept(&mut self) -> (TcpStream, SocketAddr) {
        loop {
            match self.listener.accept().await {
                Ok(accepted) => {
                    if self.in_a_row > 0 {
                        tracing::info!(
                            listener = self.name,
                            failures = self.in_a_row,
                            "accepting connections again"
                        );
                        self.in_a_row = 0;
                    }
                    return accepted;
                }
                Err(error) => {
                    self.failures.inc();
                    if self.in_a_row == 0 {
                        tracing::warn!(listener = self.name, %error, "accepting a connection failed; backing off until it works again");
                    }
                    self.in_a_row = self.in_a_row.saturating_add(1);
                    tokio::time::sleep(back_off(self.in_a_row)).await;
                }
            }
        }
    }
}

/// How a listener holds its connections.
#[derive(Debug, Clone, Copy)]
pub struct Held {
    /// The most connections held at once; more are closed as they come.
    pub most: usize,
    /// Each request's whole life, answer written included ([`Deadline`]).
    pub deadline: Duration,
    /// The most a request's head may take.
    pub buffer: usize,
}

/// Serves every connection `acceptor` takes, as `held` says, with the service `serving` makes
/// for its peer, until the process ends; a connection that ends in an error is logged with the
/// acceptor's name.
pub async fn serve<F, S>(mut acceptor: Acceptor, held: Held, serving: F)
where
    F: Fn(SocketAddr) -> S,
    S: HttpService<Incoming, ResBody = Full<Bytes>> + Send + 'static,
    S::Future: Send + 'static,
{
    let connections = Arc::new(Semaphore::new(held.most));
    loop {
        let (stream, peer) = acceptor.accept().await;
        // Over the cap the connection is closed at once: it waits for nothing.
        let Ok(permit) = connections.clone().try_acquire_owned() else {
            continue;
        };
        let (service, name) = (serving(peer), acceptor.name);
        tokio::spawn(async move {
            let served = http1::Builder::new()
                .max_buf_size(held.buffer)
                .serve_connection(TokioIo::new(Deadline::new(stream, held.deadline)), service)
                .await;
            if let Err(error) = served {
                tracing::debug!(listener = name, %error, "connection ended");
            }
            drop(permit);
        });
    }
}

/// The wait after the `failures`-th failed accept in a row: 5 ms, doubling, at most 1 s.
pub fn back_off(failures: u32) -> Duration {
    let doublings = failures.saturating_sub(1).min(16);
    FIRST_BACK_OFF
        .saturating_mul(1 << doublings)
        .min(LONGEST_BACK_OFF)
}

/// A connection whose every request must be over, answer written, within `budget` of the end
/// of the answer before it (or of the connection's start); past it, every read and write fails
/// and the server closes the connection. An idle connection is closed the same way. The clock
/// starts again only once an answer has been written out whole, which a client that does not
/// read never lets happen, and a client that reads a byte at a time cannot stretch.
pub struct Deadline<IO> {
    io: IO,
    budget: Duration,
    timer: Pin<Box<Sleep>>,
    /// Whether bytes were written since the clock last started: the next completed flush is
    /// the end of an answer.
    wrote: bool,
}

impl<IO> Deadline<IO> {
    pub fn new(io: IO, budget: Duration) -> Self {
        Self {
            io,
            budget,
            timer: Box::pin(tokio::time::sleep(budget)),
            wrote: false,
        }
    }

    /// Fails once the deadline has passed, and otherwise has the task woken when it does.
    fn check(&mut self, cx: &mut Context<'_>) -> io::Result<()> {
        match self.timer.as_mut().poll(cx) {
            Poll::Ready(()) => Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "a request took longer than {}, answer included",
                    spoken(self.budget)
                ),
            )),
            Poll::Pending => Ok(()),
        }
    }
}

impl<IO: AsyncRead + Unpin> AsyncRead for Deadline<IO> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        self.check(cx)?;
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for Deadline<IO> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.check(cx)?;
        let written = ready!(Pin::new(&mut self.io).poll_write(cx, buf))?;
        self.wrote |= written > 0;
        Poll::Ready(Ok(written))
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.check(cx)?;
        let written = ready!(Pin::new(&mut self.io).poll_write_vectored(cx, bufs))?;
        self.wrote |= written > 0;
        Poll::Ready(Ok(written))
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.check(cx)?;
        ready!(Pin::new(&mut self.io).poll_flush(cx))?;
        if std::mem::take(&mut self.wrote) {
            let next = Instant::now() + self.budget;
            self.timer.as_mut().reset(next);
        }
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.check(cx)?;
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    use super::*;

    #[test]
    fn accepting_backs_off_from_5ms_doubling_to_a_second() {
        let waits: Vec<u128> = [1, 2, 3, 8, 9, 100, u32::MAX]
            .into_iter()
            .map(|failures| back_off(failures).as_millis())
            .collect();
        assert_eq!(waits, vec![5, 10, 20, 640, 1000, 1000, 1000]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_client_that_does_not_read_its_answers_loses_its_connection_at_the_deadline() {
        // A pipe whose other end never reads: 1 KiB fills it.
        let (server, _client) = tokio::io::duplex(1024);
        let mut server = Deadline::new(server, Duration::from_secs(5));
        let started = Instant::now();
        let answer = vec![b'x'; 64 * 1024];
        let error = server
            .write_all(&answer)
            .await
            .expect_err("the write never completes");
        assert_eq!(error.kind(), io::ErrorKind::TimedOut);
        assert_eq!(
            error.to_string(),
            "a request took longer than 5s, answer included"
        );
        assert_eq!(started.elapsed(), Duration::from_secs(5));
    }

    #[tokio::test(start_paused = true)]
    async fn each_answer_written_whole_gives_the_next_request_its_own_deadline() {
        let (server, mut client) = tokio::io::duplex(64 * 1024);
        let mut server = Deadline::new(server, Duration::from_secs(5));
        for _ in 0..3 {
            tokio::time::advance(Duration::from_secs(4)).await;
            server.write_all(b"an answer").await.expect("in time");
            server.flush().await.expect("in time");
            let mut read = [0; 9];
            client.read_exact(&mut read).await.expect("the answer");
        }
        // Idle: no request comes.
        let mut buf = [0; 1];
        let error = server.read(&mut buf).await.expect_err("closed when idle");
        assert_eq!(error.kind(), io::ErrorKind::TimedOut);
    }

    #[tokio::test(start_paused = true)]
    async fn reading_a_byte_at_a_time_does_not_stretch_the_deadline() {
        let (server, mut client) = tokio::io::duplex(16);
        let mut server = Deadline::new(server, Duration::from_secs(5));
        let trickle = tokio::spawn(async move {
            let mut byte = [0; 1];
            while client.read_exact(&mut byte).await.is_ok() {
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        });
        let started = Instant::now();
        let error = server
            .write_all(&[b'x'; 1024])
            .await
            .expect_err("too slow a reader");
        assert_eq!(error.kind(), io::ErrorKind::TimedOut);
        assert_eq!(started.elapsed(), Duration::from_secs(5));
        trickle.abort();
    }
}
