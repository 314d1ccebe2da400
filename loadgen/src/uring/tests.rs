//! The connection type against real loopback sockets: bytes both ways, the
//! kernel-side discard, and a dropped connection whose receive was in flight —
//! the server must see it close (a multishot receive holds the file open until
//! it is cancelled).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::{Ring, UringStream};

/// Runs `test` on a thread set up as an engine thread on the io_uring path
/// (`multishot`: receives armed once per connection, else single-shot).
fn on_ring<F: std::future::Future<Output = ()>>(multishot: bool, test: impl FnOnce() -> F) {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let local = tokio::task::LocalSet::new();
    local.block_on(&runtime, async {
        // slow_readers = !multishot: the switch Ring::start reads.
        let ring = Ring::start(4, !multishot).expect("io_uring set-up (kernel 5.19+)");
        tokio::task::spawn_local(ring.drive());
        test().await;
    });
    drop(local);
    let _inside = runtime.enter();
    Ring::stop();
}

fn connected() -> (UringStream, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (server, _) = listener.accept().unwrap();
    let stream = UringStream::new(OwnedFd::from(client), true, Ring::current().unwrap());
    (stream, server)
}

#[test]
fn bytes_go_both_ways() {
    for multishot in [false, true] {
        on_ring(multishot, || async {
            let (mut stream, mut server) = connected();
            let big: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
            // The server on its own thread: this one must keep running the ring's
            // driver (a blocking read here would wait for a send never submitted).
            let peer = {
                let big = big.clone();
                std::thread::spawn(move || {
                    let mut got = [0u8; 18];
                    server.read_exact(&mut got).unwrap();
                    assert_eq!(&got, b"GET / HTTP/1.1\r\n\r\n");
                    server.write_all(&big).unwrap();
                    server
                })
            };
            stream.write_all(b"GET / HTTP/1.1\r\n\r\n").await.unwrap();
            let mut back = vec![0u8; big.len()];
            stream.read_exact(&mut back).await.unwrap();
            assert!(back == big, "multishot {multishot}: the bytes came back changed");
            drop(peer.join().unwrap());
            assert_eq!(stream.read(&mut [0u8; 16]).await.unwrap(), 0, "EOF after the server closed");
        });
    }
}

#[test]
fn discard_counts_what_it_drops_and_stops_at_max() {
    for multishot in [false, true] {
        on_ring(multishot, || async {
            let (mut stream, mut server) = connected();
            server.write_all(&vec![7u8; 100_000]).unwrap();
            server.write_all(b"tail").unwrap();
            let mut left = 100_000;
            while left > 0 {
                let n = std::future::poll_fn(|cx| stream.poll_discard(cx, left)).await.unwrap();
                assert!(n > 0 && n <= left, "discarded {n} of {left}");
                left -= n;
            }
            // Never past `max`: the next bytes are still there to read.
            let mut tail = [0u8; 4];
            stream.read_exact(&mut tail).await.unwrap();
            assert_eq!(&tail, b"tail", "multishot {multishot}");
            drop(server);
            assert_eq!(std::future::poll_fn(|cx| stream.poll_discard(cx, 10)).await.unwrap(), 0, "EOF");
        });
    }
}

#[test]
fn a_dropped_connection_with_a_receive_in_flight_really_closes() {
    for multishot in [false, true] {
        on_ring(multishot, || async {
            let (mut stream, mut server) = connected();
            // A receive in flight (nothing to read yet), then the connection dropped.
            let pending = tokio::time::timeout(Duration::from_millis(50), stream.read(&mut [0u8; 64])).await;
            assert!(pending.is_err(), "nothing was sent: the read must still be waiting");
            drop(stream);
            // Let the driver submit the cancellation, as the engine's loop would.
            tokio::time::sleep(Duration::from_millis(20)).await;
            server.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
            let started = Instant::now();
            let n = server.read(&mut [0u8; 16]).expect("EOF, not a timeout: the socket must be closed");
            assert_eq!(n, 0, "multishot {multishot}: the server sees the close");
            assert!(started.elapsed() < Duration::from_secs(1));
        });
    }
}

#[test]
fn a_send_to_a_reset_connection_fails_as_a_reset() {
    on_ring(true, || async {
        let (mut stream, server) = connected();
        // SO_LINGER 0: close() sends a RST.
        let linger = libc::linger { l_onoff: 1, l_linger: 0 };
        let fd = std::os::fd::AsRawFd::as_raw_fd(&server);
        // SAFETY: a valid socket, a valid option value.
        unsafe {
            libc::setsockopt(fd, libc::SOL_SOCKET, libc::SO_LINGER, (&raw const linger).cast(), size_of::<libc::linger>() as u32)
        };
        drop(server);
        tokio::time::sleep(Duration::from_millis(20)).await;
        let _ = stream.write_all(b"GET / HTTP/1.1\r\n\r\n").await;
        let e = stream.read(&mut [0u8; 16]).await.expect_err("a reset, not EOF");
        assert!(
            matches!(e.kind(), std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::BrokenPipe),
            "{e:?}"
        );
    });
}
