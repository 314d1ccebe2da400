//! The thread's provided-buffer ring (IORING_REGISTER_PBUF_RING): receive buffers
//! the kernel picks from when a receive completes, shared by all the thread's
//! connections — so an idle connection holds no buffer of its own (10,000 idle
//! connections cost nothing here), as the epoll path's one scratch buffer per
//! thread does.
//!
//! Layout (io_uring_register_buf_ring(3)): an array of `io_uring_buf` entries
//! {addr u64, len u32, bid u16, resv u16}; the ring's tail is the `resv` field of
//! entry 0 (offset 14), written by us with release ordering, read by the kernel.
//! The kernel takes buffers at its head; we hand them back at the tail once their
//! bytes are consumed.

use std::alloc::{Layout, alloc_zeroed, dealloc};
use std::io;
use std::sync::atomic::{AtomicU16, Ordering};

use io_uring::IoUring;

/// The buffer group id of the thread's ring (one group per ring).
pub const GROUP: u16 = 0;

/// Bytes of one entry of the ring (struct io_uring_buf).
const ENTRY_BYTES: usize = 16;

pub struct BufRing {
    /// The entries, page-aligned (the kernel requires it), `entries` of them.
    ring: *mut u8,
    ring_layout: Layout,
    /// The buffers themselves, `entries × size` bytes. A plain allocation: pages
    /// never used are never touched, so they cost no RSS.
    data: Box<[u8]>,
    entries: u16,
    size: u32,
    /// Our copy of the tail (the kernel reads the shared one).
    tail: u16,
}

impl BufRing {
    /// Registers `entries` (a power of two) buffers of `size` bytes with `ring`.
    pub fn register(ring: &IoUring, entries: u16, size: u32) -> io::Result<BufRing> {
        assert!(entries.is_power_of_two(), "the kernel wants a power of two");
        let ring_layout = Layout::from_size_align(entries as usize * ENTRY_BYTES, 4096).expect("layout");
        // SAFETY: the layout has a non-zero size.
        let mem = unsafe { alloc_zeroed(ring_layout) };
        if mem.is_null() {
            return Err(io::Error::new(io::ErrorKind::OutOfMemory, "buffer ring"));
        }
        let mut bufs = BufRing {
            ring: mem,
            ring_layout,
            data: vec![0u8; entries as usize * size as usize].into_boxed_slice(),
            entries,
            size,
            tail: 0,
        };
        // SAFETY: `mem` stays valid until Drop, which runs only after the ring that
        // registered it is gone (Ring's field order, ring.rs).
        unsafe { ring.submitter().register_buf_ring_with_flags(mem as u64, entries, GROUP, 0)? };
        for bid in 0..entries {
            bufs.put(bid);
        }
        bufs.publish();
        Ok(bufs)
    }

    /// The first `len` bytes of buffer `bid`, as the kernel filled them.
    pub fn bytes(&self, bid: u16, len: usize) -> &[u8] {
        let start = bid as usize * self.size as usize;
        &self.data[start..start + len]
    }

    /// Gives buffer `bid` back to the kernel.
    pub fn recycle(&mut self, bid: u16) {
        self.put(bid);
        self.publish();
    }

    fn put(&mut self, bid: u16) {
        let index = (self.tail & (self.entries - 1)) as usize;
        let addr = self.data.as_ptr() as u64 + bid as u64 * self.size as u64;
        // SAFETY: index < entries, each entry is 16 bytes inside the allocation; the
        // kernel reads an entry only between its head and the published tail, and
        // this one is past the tail until publish().
        unsafe {
            let entry = self.ring.add(index * ENTRY_BYTES);
            (entry as *mut u64).write(addr);
            (entry.add(8) as *mut u32).write(self.size);
            (entry.add(12) as *mut u16).write(bid);
        }
        self.tail = self.tail.wrapping_add(1);
    }

    fn publish(&self) {
        // SAFETY: offset 14 of entry 0 is the shared tail, 2-byte aligned.
        let tail = unsafe { &*(self.ring.add(14) as *const AtomicU16) };
        tail.store(self.tail, Ordering::Release);
    }
}

impl BufRing {
    /// Never frees this memory (the kernel may still be using it).
    pub fn leak(&mut self) {
        std::mem::forget(std::mem::take(&mut self.data));
        self.ring = std::ptr::null_mut();
    }
}

impl Drop for BufRing {
    fn drop(&mut self) {
        if !self.ring.is_null() {
            // SAFETY: allocated in register() with this layout.
            unsafe { dealloc(self.ring, self.ring_layout) };
        }
    }
}
