//! Reference-counted arrays (issue 7, item 3; paper §1 and §3): a descriptor
//! with the reference count and the shape, co-allocated with the data vector
//! in one chunk of the heap manager ([`crate::rich::alloc_with_descriptor`]).
//!
//! The aggregate update problem (§1): an update of an array whose count is
//! one happens in place; a shared array is copied first, and the copy is
//! updated. Counts are atomic, so arrays may be shared between threads; the
//! last release (possibly on another thread, which makes it a remote free)
//! frees the chunk.
//!
//! Invariant: `rc` counts the live `RcArray` values that point at the
//! descriptor; the data is written only through a value that saw `rc == 1`
//! (with `Acquire`, after every other holder's `Release` decrement).

use core::alloc::Layout;
use core::marker::PhantomData;
use core::ptr::NonNull;
use std::sync::atomic::{fence, AtomicUsize, Ordering};

use crate::misuse::AllocError;
use crate::os;
use crate::rich::{alloc_with_descriptor, data_offset};
use crate::thread_heap;

/// The highest rank an array may have.
pub const MAX_RANK: usize = 4;

#[repr(C)]
struct Descriptor {
    rc: AtomicUsize,
    len: usize,
    rank: usize,
    shape: [usize; MAX_RANK],
}

pub struct RcArray<T: Copy> {
    desc: NonNull<Descriptor>,
    data: NonNull<T>,
    _owns: PhantomData<T>,
}

// SAFETY: the data is shared only read-only (writes need rc == 1, i.e. no
// other holder) and the count is atomic.
unsafe impl<T: Copy + Send + Sync> Send for RcArray<T> {}
// SAFETY: as above.
unsafe impl<T: Copy + Send + Sync> Sync for RcArray<T> {}

impl<T: Copy> RcArray<T> {
    fn alloc_uninit(shape: &[usize]) -> Result<Self, AllocError> {
        let invalid = |reason| AllocError::Invalid {
            size: 0,
            align: core::mem::align_of::<T>(),
            reason,
        };
        if shape.len() > MAX_RANK {
            return Err(invalid("an RcArray has at most 4 dimensions (MAX_RANK)"));
        }
        let len = shape
            .iter()
            .try_fold(1usize, |a, &d| a.checked_mul(d))
            .ok_or(invalid("the number of elements overflows usize"))?;
        let data =
            Layout::array::<T>(len).map_err(|_| invalid("the array is larger than isize::MAX"))?;
        let co = alloc_with_descriptor(Layout::new::<Descriptor>(), data)?;
        let mut dims = [0; MAX_RANK];
        dims[..shape.len()].copy_from_slice(shape);
        let desc = co.descriptor.cast::<Descriptor>();
        // SAFETY: the chunk starts with room for the descriptor, aligned.
        unsafe {
            desc.as_ptr().write(Descriptor {
                rc: AtomicUsize::new(1),
                len,
                rank: shape.len(),
                shape: dims,
            });
        }
        Ok(RcArray {
            desc,
            data: co.data.cast(),
            _owns: PhantomData,
        })
    }

    /// An array of `shape` whose element `i` (row-major) is `f(i)`.
    pub fn from_fn(shape: &[usize], mut f: impl FnMut(usize) -> T) -> Result<Self, AllocError> {
        let a = Self::alloc_uninit(shape)?;
        for i in 0..a.len() {
            // SAFETY: i < len; the fresh array is ours alone.
            unsafe { a.data.as_ptr().add(i).write(f(i)) };
        }
        Ok(a)
    }

    /// An array of `shape` filled with `value`.
    pub fn new(shape: &[usize], value: T) -> Result<Self, AllocError> {
        Self::from_fn(shape, |_| value)
    }

    fn desc(&self) -> &Descriptor {
        // SAFETY: the descriptor lives while rc > 0, and self holds a count.
        unsafe { self.desc.as_ref() }
    }

    pub fn len(&self) -> usize {
        self.desc().len
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn shape(&self) -> &[usize] {
        let d = self.desc();
        &d.shape[..d.rank]
    }

    /// The current reference count.
    pub fn refcount(&self) -> usize {
        self.desc().rc.load(Ordering::Acquire)
    }

    pub fn as_slice(&self) -> &[T] {
        // SAFETY: len initialised elements; no writer while self is shared.
        unsafe { core::slice::from_raw_parts(self.data.as_ptr(), self.len()) }
    }

    /// The data vector's address (for tests of in-place updates).
    pub fn data_ptr(&self) -> *const T {
        self.data.as_ptr()
    }

    /// The data for writing: in place when this is the only reference, else
    /// after copying into a fresh array (which this value then holds).
    /// Returns whether it copied.
    pub fn make_unique(&mut self) -> Result<bool, AllocError> {
        if self.refcount() == 1 {
            return Ok(false);
        }
        let copy = Self::alloc_uninit(self.shape())?;
        // SAFETY: both hold len elements; the copy is fresh and distinct.
        unsafe {
            core::ptr::copy_nonoverlapping(self.data.as_ptr(), copy.data.as_ptr(), self.len())
        };
        *self = copy; // drops (decrements) the shared original
        Ok(true)
    }

    /// Mutable data, copying first if shared.
    pub fn make_mut(&mut self) -> Result<&mut [T], AllocError> {
        self.make_unique()?;
        // SAFETY: rc == 1, so this value is the only one reaching the data.
        Ok(unsafe { core::slice::from_raw_parts_mut(self.data.as_ptr(), self.len()) })
    }

    /// Sets element `i`; returns whether the array had to be copied.
    ///
    /// # Panics
    /// When `i` is out of bounds.
    pub fn set(&mut self, i: usize, value: T) -> Result<bool, AllocError> {
        assert!(
            i < self.len(),
            "RcArray::set: index {i} out of bounds (len {})",
            self.len()
        );
        let copied = self.make_unique()?;
        self.make_mut()?[i] = value;
        Ok(copied)
    }

    /// SAC's `modarray`: element `i` becomes `f(i, old)`, in place when this
    /// is the only reference.
    pub fn modarray(mut self, mut f: impl FnMut(usize, T) -> T) -> Result<Self, AllocError> {
        for (i, x) in self.make_mut()?.iter_mut().enumerate() {
            *x = f(i, *x);
        }
        Ok(self)
    }
}

impl<T: Copy> Clone for RcArray<T> {
    fn clone(&self) -> Self {
        if self.desc().rc.fetch_add(1, Ordering::Relaxed) > isize::MAX as usize {
            os::fatal(format_args!(
                "numagc-arena: RcArray reference count overflow"
            ));
        }
        RcArray {
            desc: self.desc,
            data: self.data,
            _owns: PhantomData,
        }
    }
}

impl<T: Copy> Drop for RcArray<T> {
    fn drop(&mut self) {
        if self.desc().rc.fetch_sub(1, Ordering::Release) != 1 {
            return;
        }
        fence(Ordering::Acquire);
        debug_assert_eq!(
            self.data.as_ptr() as usize - self.desc.as_ptr() as usize,
            data_offset(
                Layout::new::<Descriptor>(),
                Layout::array::<T>(self.len()).expect("checked at allocation")
            )
        );
        // SAFETY: the last reference: nobody reaches the chunk any more.
        if let Err(m) = unsafe { thread_heap::free(self.desc.as_ptr().cast()) } {
            os::fatal(format_args!("{m}"));
        }
    }
}

impl<T: Copy + core::fmt::Debug> core::fmt::Debug for RcArray<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("RcArray")
            .field("shape", &self.shape())
            .field("rc", &self.refcount())
            .field("data", &self.as_slice())
            .finish()
    }
}
