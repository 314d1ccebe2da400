//! The result document (schema/result-v1.schema.json) built from measurements,
//! and its two renderings: JSON for the lab, text for people.

pub mod json;
pub mod text;
pub mod warnings;

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;

use crate::config::Config;
use crate::run::Measured;
use crate::stats::histogram::{Latency, Summary};
use crate::stats::timeline::TimelineEntry;
use crate::stats::{ErrorClass, PhaseStats};

pub const SCHEMA_VERSION: u32 = 1;

#[derive(Serialize, Debug)]
pub struct Document {
    pub schema_version: u32,
    pub engine: Engine,
    pub config: ConfigDoc,
    pub started_unix_us: u64,
    #[serde(flatten)]
    pub result: PhaseDoc,
    pub timeline: Vec<TimelineEntry>,
    pub stages: Vec<StageDoc>,
    pub engine_cpu: EngineCpu,
    pub warnings: Vec<String>,
}

#[derive(Serialize, Debug)]
pub struct Engine {
    pub name: &'static str,
    pub version: &'static str,
}

#[derive(Serialize, Debug)]
pub struct ConfigDoc {
    pub url: String,
    pub method: String,
    pub connections: u32,
    pub threads: u32,
    pub duration_us: Option<u64>,
    pub requests: Option<u64>,
    pub warmup_us: u64,
    pub keepalive: bool,
    pub timeout_us: u64,
    pub rate: Option<f64>,
}

/// The fields shared by the whole run and each stage.
#[derive(Serialize, Debug)]
pub struct PhaseDoc {
    pub requests: Counts,
    pub errors: BTreeMap<&'static str, u64>,
    pub status_codes: BTreeMap<u16, u64>,
    pub bytes: Bytes,
    pub connections_opened: u64,
    pub duration_us: u64,
    pub requests_per_s: Option<f64>,
    pub bytes_per_s: Option<f64>,
    pub latency_us: Latency,
    pub latency_uncorrected_us: Option<Latency>,
    pub phases_us: Phases,
}

#[derive(Serialize, Debug)]
pub struct StageDoc {
    pub index: usize,
    pub connections: u32,
    pub rate: Option<f64>,
    #[serde(flatten)]
    pub result: PhaseDoc,
}

#[derive(Serialize, Debug)]
pub struct Counts {
    pub completed: u64,
    pub ok_2xx: u64,
    pub non_2xx: u64,
    pub failed: u64,
}

#[derive(Serialize, Debug)]
pub struct Bytes {
    pub sent: u64,
    pub received: u64,
    pub body_received: u64,
}

#[derive(Serialize, Debug)]
pub struct Phases {
    pub connect: Summary,
    pub waiting: Summary,
    pub processing: Summary,
    pub total: Summary,
}

#[derive(Serialize, Debug)]
pub struct EngineCpu {
    pub user_us: u64,
    pub system_us: u64,
    pub max_thread_busy: Option<f64>,
    pub saturated: bool,
}

/// An engine thread at or above this share of its core probably limited the result.
pub const SATURATION: f64 = 0.9;

fn micros(d: Duration) -> u64 {
    d.as_micros() as u64
}

fn per_second(count: u64, duration: Duration) -> Option<f64> {
    (!duration.is_zero()).then(|| count as f64 / duration.as_secs_f64())
}

fn phase_doc(p: &PhaseStats, duration: Duration) -> PhaseDoc {
    PhaseDoc {
        requests: Counts { completed: p.completed, ok_2xx: p.ok_2xx, non_2xx: p.non_2xx, failed: p.failed() },
        errors: ErrorClass::ALL.iter().map(|&c| (c.name(), p.errors.get(c))).collect(),
        status_codes: p
            .status
            .iter()
            .enumerate()
            .filter(|&(_, &n)| n > 0)
            .map(|(code, &n)| (code as u16, n))
            .collect(),
        bytes: Bytes { sent: p.transfer.sent, received: p.transfer.received, body_received: p.transfer.body },
        connections_opened: p.transfer.connections_opened,
        duration_us: micros(duration),
        requests_per_s: per_second(p.completed, duration),
        bytes_per_s: per_second(p.transfer.received, duration),
        latency_us: p.latency.latency(),
        latency_uncorrected_us: p.uncorrected.as_ref().map(|h| h.latency()),
        phases_us: Phases {
            connect: p.connect.summary(),
            waiting: p.waiting.summary(),
            processing: p.processing.summary(),
            total: p.total().summary(),
        },
    }
}

pub fn build(cfg: &Config, m: &Measured) -> Document {
    let whole = m.stats.whole_run();
    let max_busy = m.busy.iter().flatten().copied().fold(None, |acc: Option<f64>, b| Some(acc.map_or(b, |a| a.max(b))));
    let saturated = max_busy.is_some_and(|b| b >= SATURATION);
    let stages = cfg
        .stages
        .iter()
        .zip(&m.stats.stages)
        .zip(&m.stage_durations)
        .enumerate()
        .map(|(index, ((stage, stats), &duration))| StageDoc {
            index,
            connections: stage.connections,
            rate: cfg.rate,
            result: phase_doc(stats, duration),
        })
        .collect();
    let timeline_seconds = m.duration.as_micros().div_ceil(1_000_000) as usize;
    let result = phase_doc(&whole, m.duration);
    let warnings = warnings::collect(cfg, &result, &m.busy);
    Document {
        schema_version: SCHEMA_VERSION,
        engine: Engine { name: "stackbench-load", version: env!("CARGO_PKG_VERSION") },
        config: ConfigDoc {
            url: cfg.url_text.clone(),
            method: cfg.method.clone(),
            connections: cfg.connections,
            threads: cfg.threads,
            duration_us: cfg.duration.map(micros),
            requests: cfg.requests,
            warmup_us: micros(cfg.warmup),
            keepalive: cfg.keepalive,
            timeout_us: micros(cfg.timeout).max(1),
            rate: cfg.rate,
        },
        started_unix_us: m.started_unix_us,
        result,
        timeline: m.stats.timeline.entries(timeline_seconds),
        stages,
        engine_cpu: EngineCpu {
            user_us: m.cpu.user_us,
            system_us: m.cpu.system_us,
            max_thread_busy: max_busy,
            saturated,
        },
        warnings,
    }
}
