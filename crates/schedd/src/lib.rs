//! # schedd — the access point's job queue, as pure logic (being written; issue 5)
