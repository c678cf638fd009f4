//! `--transport mpi`: the PE groups of `numagc bench` over MPI, one PE per
//! rank (`numagc::pe::mpi`), when this command is built with the `mpi`
//! feature; without it, a type with no values, so that the harness names
//! MPI without `cfg` and a build without MPI refuses `--transport mpi`
//! with a clear message.

#[cfg(feature = "mpi")]
pub use numagc::pe::mpi::MpiSession;

/// No MPI in this build: no value of this type exists.
#[cfg(not(feature = "mpi"))]
pub enum MpiSession {}

#[cfg(not(feature = "mpi"))]
impl MpiSession {
    pub fn init() -> numagc::Result<MpiSession> {
        Err(numagc::Error::misuse(
            "this numagc was built without MPI: build it with `cargo build --release -p numagc-cli --features mpi` (scripts/install-deps.sh installs Open MPI)",
        ))
    }

    pub fn rank(&self) -> usize {
        match *self {}
    }

    pub fn size(&self) -> usize {
        match *self {}
    }

    pub fn lost_ranks(&self) -> Vec<usize> {
        match *self {}
    }

    pub fn abort(&self, _code: i32) -> ! {
        match *self {}
    }

    pub fn group(
        &self,
        _pes: usize,
        _config: numagc::Config,
        _exports: numagc::pe::Exports,
        _setup: impl Fn(&numagc::Runtime) -> numagc::Result<()>,
    ) -> numagc::Result<numagc::pe::PeGroup> {
        match *self {}
    }
}
