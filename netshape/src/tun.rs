//! Opening a TUN device inside another network namespace: enter the namespace (this
//! thread only), open /dev/net/tun and bind it to the device with TUNSETIFF, come back.
//! The descriptor stays bound to the device in that namespace; reading and writing it
//! needs no namespace. TUNSETIFF attaches to an existing device (made persistent by
//! `ip tuntap add`) or creates one that lives as long as this descriptor.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;

// <linux/if_tun.h>
const TUNSETIFF: libc::c_ulong = 0x4004_54ca; // _IOW('T', 202, int)
const IFF_TUN: libc::c_short = 0x0001;
const IFF_NO_PI: libc::c_short = 0x1000;

#[repr(C)]
struct IfReq {
    name: [u8; libc::IFNAMSIZ],
    flags: libc::c_short,
    _pad: [u8; 22], // the rest of struct ifreq's union (40 bytes in all)
}

fn open_path(path: &Path, flags: libc::c_int) -> io::Result<OwnedFd> {
    let c = CString::new(path.as_os_str().as_encoded_bytes()).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    let fd = unsafe { libc::open(c.as_ptr(), flags | libc::O_CLOEXEC) };
    if fd < 0 { Err(io::Error::last_os_error()) } else { Ok(unsafe { OwnedFd::from_raw_fd(fd) }) }
}

fn enter(ns: &OwnedFd) -> io::Result<()> {
    if unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The TUN device `name` in the namespace whose file is `netns` (e.g. /run/netns/NAME),
/// opened non-blocking. Errors are one sentence naming what failed.
pub fn open_in(netns: &Path, name: &str) -> Result<OwnedFd, String> {
    let home = open_path(Path::new("/proc/thread-self/ns/net"), libc::O_RDONLY)
        .map_err(|e| format!("cannot read this thread's network namespace: {e}"))?;
    let target = open_path(netns, libc::O_RDONLY)
        .map_err(|e| format!("cannot open the network namespace {}: {e}", netns.display()))?;
    enter(&target).map_err(|e| format!("cannot enter the network namespace {}: {e}", netns.display()))?;
    let opened = open_tun(name);
    // Back home whatever happened: the threads started later inherit this thread's namespace.
    enter(&home).map_err(|e| format!("cannot return to the original network namespace: {e}"))?;
    opened.map_err(|e| match e.raw_os_error() {
        Some(libc::EBUSY) => format!("TUN device {name} in {} is in use by another process", netns.display()),
        Some(libc::EINVAL) => format!("{name} in {} exists and is not a TUN device", netns.display()),
        _ => format!("cannot open TUN device {name} in {}: {e}", netns.display()),
    })
}

fn open_tun(name: &str) -> io::Result<OwnedFd> {
    let fd = open_path(Path::new("/dev/net/tun"), libc::O_RDWR | libc::O_NONBLOCK)?;
    let mut req = IfReq { name: [0; libc::IFNAMSIZ], flags: IFF_TUN | IFF_NO_PI, _pad: [0; 22] };
    req.name[..name.len()].copy_from_slice(name.as_bytes());
    if unsafe { libc::ioctl(fd.as_raw_fd(), TUNSETIFF, &mut req) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(fd)
}

/// A valid interface name: 1 to 15 bytes, no '/', ':', whitespace or NUL (dev_valid_name).
pub fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() >= libc::IFNAMSIZ || name == "." || name == ".." {
        return Err(format!("{name:?} is not a device name (1 to 15 characters)"));
    }
    if name.bytes().any(|b| b == b'/' || b == b':' || b.is_ascii_whitespace() || b == 0) {
        return Err(format!("{name:?} is not a device name (no '/', ':' or spaces)"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn ifreq_is_the_kernels_size() {
        assert_eq!(std::mem::size_of::<super::IfReq>(), 40);
    }

    #[test]
    fn names() {
        assert!(super::check_name("sbt-a").is_ok());
        assert!(super::check_name("abcdefghijklmno").is_ok());
        assert!(super::check_name("abcdefghijklmnop").is_err());
        assert!(super::check_name("").is_err());
        assert!(super::check_name("a/b").is_err());
        assert!(super::check_name("a b").is_err());
    }
}
