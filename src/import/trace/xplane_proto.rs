//! The XSpace protobuf messages of `tsl/profiler/protobuf/xplane.proto` (package
//! `tensorflow.profiler`), as prost message types.
//!
//! Written out with prost's derive macros, field for field and tag for tag, so that decoding
//! needs neither `protoc` nor a build script on users' machines. Fields and tags follow the
//! upstream file; `XLine` reserves tags 5 to 8 there and they are absent here too.

use std::collections::HashMap;

/// A profile: one plane per device or host.
#[derive(Clone, PartialEq, prost::Message)]
pub struct XSpace {
    #[prost(message, repeated, tag = "1")]
    pub planes: Vec<XPlane>,
    #[prost(string, repeated, tag = "2")]
    pub errors: Vec<String>,
    #[prost(string, repeated, tag = "3")]
    pub warnings: Vec<String>,
    #[prost(string, repeated, tag = "4")]
    pub hostnames: Vec<String>,
}

/// A device or host, such as `/device:GPU:0`, `/device:TPU:0` or `/host:CPU`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct XPlane {
    #[prost(int64, tag = "1")]
    pub id: i64,
    #[prost(string, tag = "2")]
    pub name: String,
    #[prost(message, repeated, tag = "3")]
    pub lines: Vec<XLine>,
    #[prost(map = "int64, message", tag = "4")]
    pub event_metadata: HashMap<i64, XEventMetadata>,
    #[prost(map = "int64, message", tag = "5")]
    pub stat_metadata: HashMap<i64, XStatMetadata>,
    #[prost(message, repeated, tag = "6")]
    pub stats: Vec<XStat>,
}

/// A timeline (a thread, a stream, `XLA Ops`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct XLine {
    #[prost(int64, tag = "1")]
    pub id: i64,
    #[prost(int64, tag = "10")]
    pub display_id: i64,
    #[prost(string, tag = "2")]
    pub name: String,
    #[prost(string, tag = "11")]
    pub display_name: String,
    /// Start of the line in nanoseconds since the UNIX epoch; event offsets count from it.
    #[prost(int64, tag = "3")]
    pub timestamp_ns: i64,
    #[prost(int64, tag = "9")]
    pub duration_ps: i64,
    #[prost(message, repeated, tag = "4")]
    pub events: Vec<XEvent>,
}

/// One occurrence of an event (or, with `num_occurrences`, an aggregate of several).
#[derive(Clone, PartialEq, prost::Message)]
pub struct XEvent {
    #[prost(int64, tag = "1")]
    pub metadata_id: i64,
    #[prost(oneof = "x_event::Data", tags = "2, 5")]
    pub data: Option<x_event::Data>,
    #[prost(int64, tag = "3")]
    pub duration_ps: i64,
    #[prost(message, repeated, tag = "4")]
    pub stats: Vec<XStat>,
}

pub mod x_event {
    /// Where an event sits: an offset from its line's start, or a count of aggregated events.
    #[derive(Clone, Copy, PartialEq, prost::Oneof)]
    pub enum Data {
        #[prost(int64, tag = "2")]
        OffsetPs(i64),
        #[prost(int64, tag = "5")]
        NumOccurrences(i64),
    }
}

/// A named value attached to a plane, event or event metadata.
#[derive(Clone, PartialEq, prost::Message)]
pub struct XStat {
    #[prost(int64, tag = "1")]
    pub metadata_id: i64,
    #[prost(oneof = "x_stat::Value", tags = "2, 3, 4, 5, 6, 7, 8")]
    pub value: Option<x_stat::Value>,
}

pub mod x_stat {
    /// Variant names are the `.proto` field names, as prost-build would generate them.
    #[allow(clippy::enum_variant_names)]
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Value {
        #[prost(double, tag = "2")]
        DoubleValue(f64),
        #[prost(uint64, tag = "3")]
        Uint64Value(u64),
        #[prost(int64, tag = "4")]
        Int64Value(i64),
        #[prost(string, tag = "5")]
        StrValue(String),
        #[prost(bytes, tag = "6")]
        BytesValue(Vec<u8>),
        /// The id of another XStatMetadata whose name is the value.
        #[prost(uint64, tag = "7")]
        RefValue(u64),
        #[prost(bytes, tag = "8")]
        CompressedStrValue(Vec<u8>),
    }
}

/// What an event is: its name and stats shared by all its occurrences.
#[derive(Clone, PartialEq, prost::Message)]
pub struct XEventMetadata {
    #[prost(int64, tag = "1")]
    pub id: i64,
    #[prost(string, tag = "2")]
    pub name: String,
    #[prost(string, tag = "4")]
    pub display_name: String,
    #[prost(bytes, tag = "3")]
    pub metadata: Vec<u8>,
    #[prost(message, repeated, tag = "5")]
    pub stats: Vec<XStat>,
    #[prost(int64, repeated, tag = "6")]
    pub child_id: Vec<i64>,
}

/// A stat's name.
#[derive(Clone, PartialEq, prost::Message)]
pub struct XStatMetadata {
    #[prost(int64, tag = "1")]
    pub id: i64,
    #[prost(string, tag = "2")]
    pub name: String,
    #[prost(string, tag = "3")]
    pub description: String,
}
