//! HTCondor's configuration language (work in progress; see issue 3).
pub mod params;
