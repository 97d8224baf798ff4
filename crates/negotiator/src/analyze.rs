//! Why a job does not run (`q -better-analyze`); being written (issue 7).
