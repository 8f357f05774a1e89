//! Memory given back to the system. Decoding the first lists of every workload takes a few MiB
//! for seconds; glibc keeps what was freed in the holes of its heap, where the schedules that
//! stay are scattered, so without a trim the process stays at its start-up peak for good.

/// Returns the free pages of every malloc arena to the system (glibc's `malloc_trim`, which
/// also releases whole free pages inside the heap, not only at its top).
pub fn give_back_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks the allocator's own free lists; it takes no pointer of ours.
    unsafe {
        libc::malloc_trim(0);
    }
}
