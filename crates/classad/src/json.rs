//! HTCondor's JSON form of ClassAds (to be written).
