//! What imported files say about the device they were measured on, and the environment
//! fingerprint of imported results.
//!
//! An imported file was written on another machine, so the importing machine's accelerator
//! says nothing about it: the accelerator, driver, clocks and tool versions of imported results
//! come from the files, or are absent. Each format names what it can: Kineto's
//! `deviceProperties` and CUDA versions, ncu's device name, compute capability and clock
//! attributes (and `ncu --version` output given alongside), XPlane's `/device:` planes and the
//! JAX versions of `/host:metadata`, Omniperf's `sysinfo.csv` for rocprof, Proton's device
//! table. The host fields (CPU model, cores, architecture, OS, kernel release) keep describing
//! the importing machine only where the files name no device; once they name one, the host
//! fields are `unknown` unless the files name them too, so two imports of files from one GPU
//! compare whichever machine imported them, and files from different GPUs are refused like
//! live runs on different GPUs.

use std::collections::{BTreeMap, BTreeSet};

use crate::machine::fingerprint::{Fingerprint, UNKNOWN};

/// The compute clock's maximum in MHz (SM clock; AMD's `sclk`), as the live fingerprint names it.
pub const SM_MAX_MHZ: &str = "sm_max_mhz";
/// The memory clock's maximum in MHz.
pub const MEM_MAX_MHZ: &str = "mem_max_mhz";

/// A host field that a file may name (Omniperf's `sysinfo.csv` does).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum HostField {
    CpuModel,
    Os,
    Kernel,
}

impl HostField {
    fn name(self) -> &'static str {
        match self {
            HostField::CpuModel => "cpu_model",
            HostField::Os => "os",
            HostField::Kernel => "kernel",
        }
    }
}

/// The device (and what else about the machine) that one or more files name. A file that
/// lists several devices (a trace of a host with eight GPUs) names each distinct one; they
/// are kept sorted, so the description does not depend on the order of the list.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Device {
    accelerators: BTreeSet<String>,
    drivers: BTreeSet<String>,
    clocks: BTreeMap<String, BTreeSet<String>>,
    tools: BTreeMap<String, String>,
    host: BTreeMap<HostField, String>,
}

impl Device {
    /// Records an accelerator model (`NVIDIA H100`) or, where the file names no model, the
    /// most specific description it gives (`compute capability 10.0`).
    pub fn accelerator(&mut self, name: &str) {
        insert_trimmed(&mut self.accelerators, name);
    }

    /// Records a driver version.
    pub fn driver(&mut self, version: &str) {
        insert_trimmed(&mut self.drivers, version);
    }

    /// Records a clock in MHz under one of the fingerprint's clock keys.
    pub fn clock_mhz(&mut self, key: &str, mhz: f64) {
        if mhz.is_finite() && mhz > 0.0 {
            let text = if mhz.fract() == 0.0 {
                format!("{mhz:.0}")
            } else {
                format!("{mhz}")
            };
            self.clocks.entry(key.to_string()).or_default().insert(text);
        }
    }

    /// Records a clock given in kHz, as CUDA's and HIP's device attributes give it.
    pub fn clock_khz(&mut self, key: &str, khz: f64) {
        self.clock_mhz(key, khz / 1000.0);
    }

    /// Records the version of a tool (profiler, runtime) that wrote or fed the file.
    pub fn tool(&mut self, name: &str, version: &str) {
        let version = version.trim();
        if !version.is_empty() {
            self.tools.insert(name.to_string(), version.to_string());
        }
    }

    /// Records a host field the file names.
    pub fn host(&mut self, field: HostField, value: &str) {
        let value = value.trim();
        if !value.is_empty() {
            self.host.insert(field, value.to_string());
        }
    }

    /// Whether a device was named.
    pub fn names_device(&self) -> bool {
        !self.accelerators.is_empty()
    }

    /// The accelerator description of the environment: each distinct device, joined with `; `.
    pub fn describe(&self) -> Option<String> {
        joined(&self.accelerators)
    }

    /// Takes in what a later file of the same import names. Files from different devices (or
    /// drivers, clocks, tool versions) are not samples of one result, so a field that both
    /// name differently is refused; a field only one names is taken from it.
    pub fn merge(&mut self, later: Device) -> Result<(), String> {
        let mut conflicts = Vec::new();
        let mut check = |what: &str, mine: Option<String>, theirs: Option<String>| {
            if let (Some(a), Some(b)) = (mine, theirs)
                && a != b
            {
                conflicts.push(format!("{what} `{b}` where the files before it name `{a}`"));
            }
        };
        let (mine, theirs) = (joined(&self.accelerators), joined(&later.accelerators));
        check("accelerator", mine, theirs);
        check("driver", joined(&self.drivers), joined(&later.drivers));
        for (key, values) in &later.clocks {
            let mine = self.clocks.get(key).and_then(joined);
            check(&format!("clocks.{key}"), mine, joined(values));
        }
        for (name, version) in &later.tools {
            let mine = self.tools.get(name).cloned();
            check(&format!("tools.{name}"), mine, Some(version.clone()));
        }
        for (field, value) in &later.host {
            let mine = self.host.get(field).cloned();
            check(field.name(), mine, Some(value.clone()));
        }
        if !conflicts.is_empty() {
            return Err(format!(
                "names {}: files measured on different devices are not samples of one result; import them separately and compare the results (which refuses different devices, or says so with --allow-fingerprint-mismatch)",
                conflicts.join(", ")
            ));
        }
        if self.accelerators.is_empty() {
            self.accelerators = later.accelerators;
        }
        if self.drivers.is_empty() {
            self.drivers = later.drivers;
        }
        for (key, values) in later.clocks {
            self.clocks.entry(key).or_insert(values);
        }
        for (name, version) in later.tools {
            self.tools.entry(name).or_insert(version);
        }
        for (field, value) in later.host {
            self.host.entry(field).or_insert(value);
        }
        Ok(())
    }

    /// The environment of results imported from files that name this: the importing
    /// machine's host fields and git revision (`host`, [`Fingerprint::capture_host`]) where no
    /// device is named, `unknown` host fields (except those the files name) where one is, and
    /// never this machine's accelerator.
    pub fn environment(&self, host: Fingerprint) -> Fingerprint {
        let mut f = host;
        f.imported = true;
        if self.names_device() {
            f.cpu_model = UNKNOWN.to_string();
            f.cores = 0;
            f.arch = UNKNOWN.to_string();
            f.os = UNKNOWN.to_string();
            f.kernel = UNKNOWN.to_string();
        }
        for (field, value) in &self.host {
            let slot = match field {
                HostField::CpuModel => &mut f.cpu_model,
                HostField::Os => &mut f.os,
                HostField::Kernel => &mut f.kernel,
            };
            *slot = value.clone();
        }
        f.accelerator = self.describe();
        f.driver = joined(&self.drivers);
        f.clocks = self
            .clocks
            .iter()
            .filter_map(|(k, v)| joined(v).map(|v| (k.clone(), v)))
            .collect();
        f.tools = self.tools.clone();
        f
    }
}

fn insert_trimmed(set: &mut BTreeSet<String>, value: &str) {
    let value = value.trim();
    if !value.is_empty() {
        set.insert(value.to_string());
    }
}

fn joined(values: &BTreeSet<String>) -> Option<String> {
    (!values.is_empty()).then(|| values.iter().cloned().collect::<Vec<_>>().join("; "))
}

/// A CUDA version number as the CUDA API encodes it (`1000 × major + 10 × minor`: `12090` is
/// 12.9), in words.
pub fn cuda_version(encoded: i64) -> String {
    format!("{}.{}", encoded / 1000, (encoded % 1000) / 10)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This machine's host fields, as an import takes them.
    fn this_host() -> Fingerprint {
        Fingerprint::capture_host(std::path::Path::new("."))
    }

    #[test]
    fn a_named_device_replaces_the_host_and_never_claims_this_machines_accelerator() {
        let none = Device::default().environment(this_host());
        assert!(none.imported);
        assert_eq!(none.accelerator, None);
        assert_eq!(none.driver, None);
        assert!(none.clocks.is_empty() && none.tools.is_empty());
        let arch = std::env::consts::ARCH;
        assert_eq!(none.arch, arch, "the importing host stays");

        let mut d = Device::default();
        d.accelerator("NVIDIA H100");
        d.accelerator("NVIDIA H100");
        d.driver("CUDA 13.0");
        d.clock_khz(SM_MAX_MHZ, 1_980_000.0);
        d.clock_khz(MEM_MAX_MHZ, 2_619_500.0);
        d.tool("cupti", "28");
        let f = d.environment(this_host());
        assert_eq!(f.accelerator.as_deref(), Some("NVIDIA H100"));
        assert_eq!(f.driver.as_deref(), Some("CUDA 13.0"));
        assert_eq!(f.clocks[SM_MAX_MHZ], "1980");
        assert_eq!(f.clocks[MEM_MAX_MHZ], "2619.5");
        assert_eq!(f.tools["cupti"], "28");
        assert_eq!((f.cpu_model.as_str(), f.cores), (UNKNOWN, 0));
        assert_eq!((f.arch.as_str(), f.os.as_str()), (UNKNOWN, UNKNOWN));

        let cpu = "AMD Ryzen 9 7950X 16-Core Processor";
        d.host(HostField::CpuModel, cpu);
        assert_eq!(d.environment(this_host()).cpu_model, cpu);
        assert_eq!(cuda_version(12090), "12.9");
        assert_eq!(cuda_version(13000), "13.0");
    }

    #[test]
    fn files_of_one_import_must_name_the_same_device() {
        let named = |name: &str| {
            let mut d = Device::default();
            d.accelerator(name);
            d
        };
        let mut d = named("NVIDIA H100");
        d.merge(Device::default()).unwrap();
        d.merge(named("NVIDIA H100")).unwrap();
        let mut version = Device::default();
        version.tool("ncu", "2026.2.1.0");
        d.merge(version).unwrap();
        assert_eq!(d.describe().as_deref(), Some("NVIDIA H100"));
        assert_eq!(d.tools["ncu"], "2026.2.1.0");
        let err = d.merge(named("AMD Instinct MI300X")).unwrap_err();
        let conflict =
            "names accelerator `AMD Instinct MI300X` where the files before it name `NVIDIA H100`";
        assert!(err.starts_with(conflict), "{err}");
        let mut empty = Device::default();
        empty.merge(named("A")).unwrap();
        empty.accelerator("B");
        assert_eq!(empty.describe().as_deref(), Some("A; B"));
    }
}
