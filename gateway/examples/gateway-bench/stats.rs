//! Percentiles, process figures from /proc, and the machine's load.

use std::time::Duration;

/// Nearest-rank percentile (`p` in 0..=100) of microsecond samples.
pub fn pct(samples: &[f64], p: f64) -> f64 {
    if samples.is_empty() {
        return f64::NAN;
    }
    let mut s = samples.to_vec();
    s.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * s.len() as f64).ceil() as usize;
    s[rank.clamp(1, s.len()) - 1]
}

pub fn median(values: &[f64]) -> f64 {
    pct(values, 50.0)
}

pub fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// `VmRSS` and `VmHWM` of a process, in KiB.
pub fn rss_kib(pid: u32) -> Option<(u64, u64)> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| {
        s.lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u64>().ok())
    };
    Some((field("VmRSS:")?, field("VmHWM:")?))
}

/// User + system CPU time of a process (all its threads).
pub fn cpu_time(pid: u32) -> Option<Duration> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which may hold spaces): state is field 3, utime 14.
    let rest = &s[s.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_secs_f64(ticks as f64 / clock_ticks()))
}

fn clock_ticks() -> f64 {
    static T: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    *T.get_or_init(|| {
        std::process::Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(100.0)
    })
}

/// The 1-minute load average.
pub fn load1() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(f64::NAN)
}

pub fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// Time on a CPU and time runnable but waiting for one, over all threads of a process
/// (`/proc/<pid>/task/*/schedstat`): the wait is what the rest of the machine costs it.
pub fn sched(pid: u32) -> (Duration, Duration) {
    let mut run = 0u64;
    let mut wait = 0u64;
    if let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) {
        for t in tasks.flatten() {
            if let Ok(s) = std::fs::read_to_string(t.path().join("schedstat")) {
                let f: Vec<u64> = s
                    .split_whitespace()
                    .filter_map(|x| x.parse().ok())
                    .collect();
                run += f.first().copied().unwrap_or(0);
                wait += f.get(1).copied().unwrap_or(0);
            }
        }
    }
    (Duration::from_nanos(run), Duration::from_nanos(wait))
}
