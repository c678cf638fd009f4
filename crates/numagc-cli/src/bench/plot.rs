//! Plots of the harness (being written on branch bench-plot).
use super::record::{RunRecord, Summary};
use std::path::{Path, PathBuf};

pub fn write_plots(dir: &Path, _summaries: &[Summary], _runs: &[RunRecord]) -> Result<Vec<PathBuf>, String> {
    Err(format!("--plot {}: plotting is not built yet", dir.display()))
}
