//! Dividing the machine into slots: every example layout of the manual's
//! "Dividing System Resources in Multi-core Machines", "Configuring GPUs"
//! and "Dynamic Provisioning" sections, with the numbers it gives, and the
//! layouts HTCondor refuses, with their messages.

use startd::layout::{kind_attrs, layout, Layout, LayoutError, Slot};
use startd::resources::{HostReadings, Inventory, MachineResources};

fn config(text: &str) -> config::Config {
    config::load(
        &config::LoadOptions::new("STARTD", config::Root::File("condor_config".into())),
        &config::MemFiles::new().with("condor_config", text),
        &config::FixedHost::empty().with_macro("DETECTED_CORES", "8"),
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

/// An 8-core machine with 16 GiB of memory, 800 000 KiB of free disk and
/// 80 000 KiB of swap.
fn eight_cores() -> HostReadings {
    HostReadings::simple(8, 16384, 800_000, 80_000)
}

fn try_layout(text: &str, host: &HostReadings) -> Result<(MachineResources, Layout), LayoutError> {
    let config = config(text);
    let machine = MachineResources::from_config(&config, host).unwrap_or_else(|e| panic!("{e}"));
    let l = layout(&config, &machine)?;
    Ok((machine, l))
}

fn slots(text: &str, host: &HostReadings) -> Vec<Slot> {
    try_layout(text, host)
        .unwrap_or_else(|e| panic!("{e}"))
        .1
        .slots
}

fn error(text: &str, host: &HostReadings) -> String {
    match try_layout(text, host) {
        Ok((_, l)) => panic!("expected an error, got {:#?}", l.slots),
        Err(e) => e.to_string(),
    }
}

/// (cpus, memory MiB, disk fraction, swap fraction) of a slot.
fn shares(s: &Slot) -> (f64, i64, f64, f64) {
    (
        s.resources.cpus,
        s.resources.memory,
        s.disk_fraction,
        s.swap_fraction,
    )
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn by_default_one_slot_per_core_with_an_even_share_of_everything() {
    let s = slots("", &eight_cores());
    assert_eq!(s.len(), 8);
    for (i, slot) in s.iter().enumerate() {
        assert_eq!(slot.id, i as u32 + 1);
        assert_eq!(slot.name, format!("slot{}", i + 1));
        assert_eq!(slot.slot_type, None);
        assert!(!slot.partitionable);
        assert_eq!(slot.resources.cpus, 1.0);
        assert_eq!(slot.resources.memory, 2048);
        assert_eq!(slot.resources.disk, 100_000);
        assert_eq!(slot.resources.swap, 10_000);
        assert!(close(slot.disk_fraction, 0.125));
    }
}

#[test]
fn num_slots_says_how_many_even_slots() {
    let s = slots("NUM_SLOTS = 4\n", &eight_cores());
    assert_eq!(s.len(), 4);
    assert!(s
        .iter()
        .all(|s| s.resources.cpus == 2.0 && s.resources.memory == 4096));
}

#[test]
fn num_slots_may_not_exceed_the_cores() {
    let msg = error("NUM_SLOTS = 12\n", &eight_cores());
    assert_eq!(
        msg,
        "NUM_SLOTS = 12 asks for more slots than the machine has CPUs (8): every slot needs at least one CPU"
    );
}

#[test]
fn num_cpus_and_memory_override_what_was_detected() {
    let s = slots("NUM_CPUS = 4\nMEMORY = 1024\n", &eight_cores());
    assert_eq!(s.len(), 4);
    assert!(s
        .iter()
        .all(|s| s.resources.cpus == 1.0 && s.resources.memory == 256));
    // RESERVED_MEMORY is taken off before dividing.
    let s = slots(
        "NUM_CPUS = 4\nMEMORY = 1024\nRESERVED_MEMORY = 24\n",
        &eight_cores(),
    );
    assert!(s.iter().all(|s| s.resources.memory == 250));
}

#[test]
fn an_uneven_division_gives_real_cpu_shares_and_truncated_memory() {
    // 8 CPUs for 3 slots: 2.67 each, published as Cpus = 2 (HTCondor's
    // rule); 16384 MiB / 3 = 5461 MiB.
    let s = slots("NUM_SLOTS = 3\n", &eight_cores());
    assert!(close(s[0].resources.cpus, 8.0 / 3.0));
    assert_eq!(s[0].resources.whole_cpus(), 2);
    assert_eq!(s[0].resources.memory, 5461);
}

/// "in a machine with 128 Mbytes of RAM, all the following definitions
/// result in the same allocation amount": 64 each for two such slots.
#[test]
fn manual_memory_amount_fraction_percentage_and_auto_agree() {
    let host = HostReadings::simple(2, 128, 1000, 1000);
    for def in ["mem=64", "mem=1/2", "mem=50%", "mem=auto"] {
        let s = slots(
            &format!("SLOT_TYPE_1 = {def}\nNUM_SLOTS_TYPE_1 = 2\n"),
            &host,
        );
        assert_eq!(s.len(), 2, "{def}");
        assert!(s.iter().all(|s| s.resources.memory == 64), "{def}: {s:?}");
        assert!(s.iter().all(|s| s.slot_type == Some(1)));
    }
}

/// The manual's machine "with 4 cores and 256 Mbytes of RAM": types 1-3
/// are all equivalent to each other, as are types 4-6.
#[test]
fn manual_equivalent_slot_type_definitions() {
    let host = HostReadings::simple(4, 256, 400_000, 40_000);
    let types = "\
SLOT_TYPE_1 = cpus=2, ram=128, swap=25%, disk=1/2
SLOT_TYPE_2 = cpus=1/2, memory=128, virt=25%, disk=50%
SLOT_TYPE_3 = c=1/2, m=50%, v=1/4, disk=1/2
SLOT_TYPE_4 = c=25%, m=64, v=1/4, d=25%
SLOT_TYPE_5 = 25%
SLOT_TYPE_6 = 1/4
";
    let one = |n: u32| {
        let s = slots(&format!("{types}NUM_SLOTS_TYPE_{n} = 1\n"), &host);
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].slot_type, Some(n));
        s[0].clone()
    };
    for n in 1..=3 {
        let s = one(n);
        assert_eq!(shares(&s), (2.0, 128, 0.5, 0.25), "type {n}");
        assert_eq!((s.resources.disk, s.resources.swap), (200_000, 10_000));
    }
    for n in 4..=6 {
        assert_eq!(shares(&one(n)), (1.0, 64, 0.25, 0.25), "type {n}");
    }
}

/// "if one slot is defined to use 10% of the memory and the rest define it
/// as auto (or leave it undefined), then the rest of the slots will evenly
/// divide 90% of the memory between themselves."
#[test]
fn manual_auto_shares_divide_what_explicit_shares_leave() {
    let host = HostReadings::simple(4, 1000, 1000, 1000);
    let s = slots(
        "SLOT_TYPE_1 = mem=10%\nNUM_SLOTS_TYPE_1 = 1\nSLOT_TYPE_2 = mem=auto\nNUM_SLOTS_TYPE_2 = 2\nNUM_SLOTS_TYPE_3 = 1\n",
        &host,
    );
    let mem: Vec<i64> = s.iter().map(|s| s.resources.memory).collect();
    assert_eq!(mem, [100, 300, 300, 300]);
    // Type 3 has no SLOT_TYPE_3: everything automatic.
    assert_eq!(s[3].slot_type, Some(3));
    assert!(s.iter().all(|s| s.resources.cpus == 1.0));
}

/// "In both of the following examples, the disk share is set to auto,
/// number of cores is 1, and everything else is 50%".
#[test]
fn manual_blanket_share_with_named_exceptions() {
    let host = HostReadings::simple(2, 1024, 1000, 1000);
    let a = slots(
        "SLOT_TYPE_1 = cpus=1, ram=1/2, swap=50%\nNUM_SLOTS_TYPE_1 = 2\n",
        &host,
    );
    let b = slots(
        "SLOT_TYPE_1 = cpus=1, disk=auto, 50%\nNUM_SLOTS_TYPE_1 = 2\n",
        &host,
    );
    assert_eq!(a, b);
    assert_eq!(shares(&a[0]), (1.0, 512, 0.5, 0.5));
}

/// The manual's custom resources: one partitionable slot with half of the
/// Cogs, 6 actuators and 50% of everything else; two static slots with
/// 25% of the Cogs, 1 actuator and 25% of everything else.
#[test]
fn manual_custom_resources_in_static_and_partitionable_slots() {
    let text = "\
MACHINE_RESOURCE_Cogs = 16
MACHINE_RESOURCE_actuator = 8
if defined MACHINE_RESOURCE_NAMES
  MACHINE_RESOURCE_NAMES = $(MACHINE_RESOURCE_NAMES) Cogs actuator
endif
SLOT_TYPE_1 = cogs=50%,actuator=6,50%
SLOT_TYPE_1_PARTITIONABLE = TRUE
NUM_SLOTS_TYPE_1 = 1
SLOT_TYPE_2 = cogs=25%,actuator=1,25%
SLOT_TYPE_2_PARTITIONABLE = FALSE
NUM_SLOTS_TYPE_2 = 2
";
    let (machine, l) = try_layout(text, &eight_cores()).unwrap();
    let s = &l.slots;
    assert_eq!(s.len(), 3);
    assert!(s[0].partitionable && !s[1].partitionable);
    let amounts = |s: &Slot| {
        (
            s.resources.cpus,
            s.resources.custom("Cogs").unwrap().amount,
            s.resources.custom("actuator").unwrap().amount,
        )
    };
    assert_eq!(amounts(&s[0]), (4.0, 8.0, 6.0));
    assert_eq!(amounts(&s[1]), (2.0, 4.0, 1.0));
    assert_eq!(amounts(&s[2]), (2.0, 4.0, 1.0));

    // Total<name>, Detected<name>, TotalSlot<name>, <name>.
    let m = machine.machine_attrs();
    let env = classad::Env::at(0);
    assert_eq!(m.eval_attr("TotalCogs", &env).as_int(), Some(16));
    assert_eq!(m.eval_attr("DetectedCogs", &env).as_int(), Some(16));
    assert_eq!(m.eval_attr("Totalactuator", &env).as_int(), Some(8));
    assert_eq!(
        m.eval_attr("MachineResources", &env).as_str(),
        Some("Cpus Memory Disk Swap actuator Cogs")
    );
    let mut ad = classad::ClassAd::new();
    s[1].resources
        .publish(&s[1].resources, &machine, &mut ad.refresher());
    assert_eq!(ad.eval_attr("Cogs", &env).as_int(), Some(4));
    assert_eq!(ad.eval_attr("TotalSlotCogs", &env).as_int(), Some(4));
    assert_eq!(ad.eval_attr("Cpus", &env).as_int(), Some(2));
}

/// "For the most common cases the machine should be configured for one
/// slot, managing all the resources on the machine."
#[test]
fn manual_one_partitionable_slot_with_everything() {
    let s = slots(
        "NUM_SLOTS = 1\nNUM_SLOTS_TYPE_1 = 1\nSLOT_TYPE_1 = 100%\nSLOT_TYPE_1_PARTITIONABLE = TRUE\n",
        &eight_cores(),
    );
    assert_eq!(s.len(), 1);
    assert!(s[0].partitionable);
    assert_eq!(shares(&s[0]), (8.0, 16384, 1.0, 1.0));
    assert_eq!(
        (s[0].resources.disk, s[0].resources.swap),
        (800_000, 80_000)
    );
    let mut ad = classad::ClassAd::new();
    kind_attrs(&s[0], &mut ad);
    let env = classad::Env::at(0);
    assert!(ad.eval_attr("PartitionableSlot", &env).is_true());
    assert_eq!(
        ad.eval_attr("SlotType", &env).as_str(),
        Some("Partitionable")
    );
}

/// Four GPUs as `condor_gpu_discovery -properties` reports them: two
/// with Capability 8.0, two less powerful.
fn four_gpus() -> Inventory {
    Inventory::parse(
        r#"DetectedGPUs="GPU-c4a646d7, GPU-6a96bd13, GPU-5368a050, GPU-5d2744da"
Common=[ DriverVersion=12.20; MaxSupportedVersion=12020; ]
GPU_c4a646d7=[ id="GPU-c4a646d7"; Capability=7.0; DeviceName="Tesla V100-PCIE-16GB"; GlobalMemoryMb=16160; ]
GPU_6a96bd13=[ id="GPU-6a96bd13"; Capability=7.5; DeviceName="TITAN RTX"; GlobalMemoryMb=24220; ]
GPU_5368a050=[ id="GPU-5368a050"; Capability=8.0; DeviceName="NVIDIA A100-SXM4-40GB"; GlobalMemoryMb=40536; ]
GPU_5d2744da=[ id="GPU-5d2744da"; Capability=8.0; DeviceName="NVIDIA A100-SXM4-40GB"; GlobalMemoryMb=40536; ]
"#,
    )
    .unwrap()
}

fn gpu_host(cpus: u32) -> HostReadings {
    let mut host = HostReadings::simple(cpus, 40960, 4_000_000, 0);
    host.inventories.insert("GPUs".into(), four_gpus());
    host
}

/// The manual's "Configuring GPUs" example, written as it is there (an
/// `@=` block per type, tabs included): the partitionable slot gets the
/// two powerful GPUs, the small static slot the GPU named by id, and the
/// two `auto` slots split what is left (one GPU, to the first of them).
#[test]
fn manual_gpu_constraints_choose_which_gpus_each_slot_gets() {
    let text = "\
use feature : GPUs
SLOT_TYPE_1 @=slot
   GPUs = 2 : Capability >= 8.0
   90%
@slot
SLOT_TYPE_1_PARTITIONABLE = TRUE
NUM_SLOTS_TYPE_1 = 1

SLOT_TYPE_2 @=slot
   GPUs = 1 : \"GPU-6a96bd13\"
   CPUs = 1
\t\t   Memory = 10
@slot
SLOT_TYPE_2_PARTITIONABLE = FALSE
NUM_SLOTS_TYPE_2 = 1

SLOT_TYPE_3 = auto
SLOT_TYPE_3_PARTITIONABLE = FALSE
NUM_SLOTS_TYPE_3 = 2
";
    // 40 cores: 90% is 36, one for slot 2, and 3 for the two auto slots
    // (on a small machine the auto slots would get less than a CPU each).
    let (machine, l) = try_layout(text, &gpu_host(40)).unwrap();
    let s = &l.slots;
    let gpus = |s: &Slot| s.resources.custom("GPUs").unwrap().ids.clone();
    assert_eq!(gpus(&s[0]), ["GPU-5368a050", "GPU-5d2744da"]);
    assert_eq!(gpus(&s[1]), ["GPU-6a96bd13"]);
    assert_eq!(gpus(&s[2]), ["GPU-c4a646d7"]);
    assert!(gpus(&s[3]).is_empty());
    assert_eq!(s[3].resources.custom("GPUs").unwrap().amount, 0.0);
    assert_eq!(
        s.iter().map(|s| s.resources.cpus).collect::<Vec<_>>(),
        [36.0, 1.0, 1.5, 1.5]
    );
    assert_eq!(s[1].resources.memory, 10);
    assert_eq!(s[0].resources.memory, 36864);

    // The slot ad carries the assigned GPUs and their properties.
    let mut ad = classad::ClassAd::new();
    s[0].resources
        .publish(&s[0].resources, &machine, &mut ad.refresher());
    let env = classad::Env::at(0);
    assert_eq!(ad.eval_attr("GPUs", &env).as_int(), Some(2));
    assert_eq!(
        ad.eval_attr("AssignedGPUs", &env).as_str(),
        Some("GPU-5368a050,GPU-5d2744da")
    );
    assert_eq!(ad.eval_attr("GPUs_Capability", &env).as_number(), Some(8.0));
    assert_eq!(
        ad.eval_attr("GPUs_DriverVersion", &env).as_number(),
        Some(12.2)
    );
    let nested = classad::parse_expr("GPUs_GPU_5d2744da.Id").unwrap();
    assert_eq!(ad.eval(&nested, &env).as_str(), Some("GPU-5d2744da"));
}

#[test]
fn a_gpu_constraint_no_free_gpu_meets_is_refused() {
    let text = "\
SLOT_TYPE_1 @=slot
   GPUs = 3 : Capability >= 8.0
   50%
@slot
NUM_SLOTS_TYPE_1 = 1
";
    assert_eq!(
        error(text, &gpu_host(8)),
        "slot1 (SLOT_TYPE_1): asks for 3 GPUs; of the unassigned GPUs \
         (GPU-c4a646d7, GPU-6a96bd13, GPU-5368a050, GPU-5d2744da), 2 match `Capability >= 8.0`"
    );
}

#[test]
fn a_constraint_by_index_picks_that_gpu() {
    let s = slots(
        "SLOT_TYPE_1 = GPUs=1 : 2, 50%\nNUM_SLOTS_TYPE_1 = 1\n",
        &gpu_host(8),
    );
    assert_eq!(s[0].resources.custom("GPUs").unwrap().ids, ["GPU-5368a050"]);
}

#[test]
fn overcommitted_cpus_are_refused_with_the_totals() {
    let msg = error(
        "SLOT_TYPE_1 = cpus=4\nNUM_SLOTS_TYPE_1 = 2\nSLOT_TYPE_2 = cpus=2\nNUM_SLOTS_TYPE_2 = 1\n",
        &eight_cores(),
    );
    assert_eq!(
        msg,
        "slot types ask for 10 CPUs, the machine has 8 (2 too many: \
         SLOT_TYPE_1 gives 4 to each of 2 slots, SLOT_TYPE_2 gives 2 to its slot)"
    );
}

#[test]
fn every_overcommitted_resource_is_named() {
    let msg = error(
        "SLOT_TYPE_1 = mem=10000, disk=75%, swap=60%\nNUM_SLOTS_TYPE_1 = 2\n",
        &eight_cores(),
    );
    assert_eq!(
        msg,
        "slot types ask for 20000 MiB of memory, the machine has 16384 MiB (3616 MiB too many: \
         SLOT_TYPE_1 gives 10000 to each of 2 slots); \
         slot types ask for 120% of the swap, which is more than all of it (20 points too many: \
         SLOT_TYPE_1 gives 60% to each of 2 slots); \
         slot types ask for 150% of the disk, which is more than all of it (50 points too many: \
         SLOT_TYPE_1 gives 75% to each of 2 slots)"
    );
}

#[test]
fn overcommitted_custom_resources_are_refused() {
    let msg = error(
        "MACHINE_RESOURCE_Cogs = 4\nSLOT_TYPE_1 = cogs=3\nNUM_SLOTS_TYPE_1 = 2\n",
        &eight_cores(),
    );
    assert_eq!(
        msg,
        "slot types ask for 6 Cogs, the machine has 4 (2 too many: SLOT_TYPE_1 gives 3 to each of 2 slots)"
    );
}

#[test]
fn auto_shares_too_small_are_refused() {
    let msg = error(
        "SLOT_TYPE_1 = cpus=6\nNUM_SLOTS_TYPE_1 = 1\nNUM_SLOTS_TYPE_2 = 3\n",
        &eight_cores(),
    );
    assert_eq!(
        msg,
        "2 of the machine's 8 CPUs are left for the 3 slots with an automatic CPU share (SLOT_TYPE_2): \
         0.67 each, but every slot needs at least one CPU"
    );
    let msg = error(
        "SLOT_TYPE_1 = disk=100%\nNUM_SLOTS_TYPE_1 = 1\nNUM_SLOTS_TYPE_2 = 1\n",
        &eight_cores(),
    );
    assert_eq!(
        msg,
        "the explicit disk shares take all of the disk, leaving nothing for 1 slots with an automatic share (SLOT_TYPE_2)"
    );
}

#[test]
fn slot_type_zero_may_not_be_defined() {
    assert_eq!(
        error("SLOT_TYPE_0 = 50%\n", &eight_cores()),
        "SLOT_TYPE_0: type 0 is the evenly divided layout used when no NUM_SLOTS_TYPE_<N> is set; \
         it cannot be defined (number slot types from 1)"
    );
}

#[test]
fn values_that_are_not_shares_are_refused() {
    let e = |def: &str| {
        error(
            &format!("SLOT_TYPE_1 = {def}\nNUM_SLOTS_TYPE_1 = 1\n"),
            &eight_cores(),
        )
    };
    assert_eq!(
        e("cpus=two"),
        "SLOT_TYPE_1: cpus: `two` is not a share: write a number, a percentage (25%), a fraction (1/4) or auto"
    );
    assert_eq!(
        e("mem=lots"),
        "SLOT_TYPE_1: mem: `lots` is not a share: write a number (MiB, or with a unit: 512M, 2G), \
         a percentage (25%), a fraction (1/4) or auto"
    );
    assert_eq!(
        e("c=1/0"),
        "SLOT_TYPE_1: c: `1/0`: a fraction needs a positive denominator"
    );
    assert_eq!(
        e("disk=1000"),
        "SLOT_TYPE_1: `disk=1000`: give disk as a percentage or fraction \
         (it changes over time, so a slot keeps a share of it)"
    );
    assert_eq!(
        e("swap=1000"),
        "SLOT_TYPE_1: `swap=1000`: give swap as a percentage or fraction \
         (it changes over time, so a slot keeps a share of it)"
    );
    assert_eq!(
        e("3"),
        "SLOT_TYPE_1: `3` is invalid: a share for all resources must be a percentage (like 25%), \
         a fraction (like 1/4) or auto; to give amounts, name the resources (like c=1, r=25%, s=25%, d=25%)"
    );
    assert!(e("150%").starts_with("SLOT_TYPE_1: `150%` is invalid"));
    assert_eq!(e("cpus="), "SLOT_TYPE_1: `cpus=`: no value for cpus");
    assert_eq!(
        e("cpus=1 : Capability > 7"),
        "SLOT_TYPE_1: `cpus=1 : Capability > 7`: a constraint (after `:`) chooses instances of a custom resource; cpus has none"
    );
    assert_eq!(
        e("widgets=2"),
        "SLOT_TYPE_1: unknown resource `widgets` in `widgets=2` (this machine has: cpus, memory, disk, swap)"
    );
}

#[test]
fn a_share_of_a_resource_the_machine_lacks_is_only_a_warning() {
    // One configuration for machines with and without GPUs.
    let (_, l) = try_layout(
        "SLOT_TYPE_1 = GPUs=50%, 50%\nNUM_SLOTS_TYPE_1 = 2\n",
        &eight_cores(),
    )
    .unwrap();
    assert_eq!(l.slots.len(), 2);
    assert_eq!(
        l.warnings,
        ["SLOT_TYPE_1: this machine has no resource `GPUs`, so `GPUs=50%` gives nothing"]
    );
}

#[test]
fn memory_amounts_may_have_units_and_items_may_have_blanks() {
    let s = slots(
        "SLOT_TYPE_1 = cpus = 2, mem = 2G, disk = 1/4\nNUM_SLOTS_TYPE_1 = 2\n",
        &eight_cores(),
    );
    assert_eq!(shares(&s[0]), (2.0, 2048, 0.25, 0.5));
    let s = slots(
        "SLOT_TYPE_1 = c=1 r=512M\nNUM_SLOTS_TYPE_1 = 1\n",
        &eight_cores(),
    );
    assert_eq!((s[0].resources.cpus, s[0].resources.memory), (1.0, 512));
}

#[test]
fn attribute_names_may_be_abbreviated_or_spelled_in_full() {
    for (def, expect) in [("Cpus=3", 3.0), ("cpu=3", 3.0), ("C=3", 3.0)] {
        let s = slots(
            &format!("SLOT_TYPE_1 = {def}\nNUM_SLOTS_TYPE_1 = 1\n"),
            &eight_cores(),
        );
        assert_eq!(s[0].resources.cpus, expect, "{def}");
    }
    for def in [
        "ram=100",
        "RAM=100",
        "MEMORY=100",
        "Mem=100",
        "R=100",
        "m=100",
    ] {
        let s = slots(
            &format!("SLOT_TYPE_1 = {def}\nNUM_SLOTS_TYPE_1 = 1\n"),
            &eight_cores(),
        );
        assert_eq!(s[0].resources.memory, 100, "{def}");
    }
    for def in [
        "swap=10%",
        "SWAP=10%",
        "S=10%",
        "VirtualMemory=10%",
        "v=10%",
    ] {
        let s = slots(
            &format!("SLOT_TYPE_1 = {def}\nNUM_SLOTS_TYPE_1 = 1\n"),
            &eight_cores(),
        );
        assert!(close(s[0].swap_fraction, 0.1), "{def}");
    }
    for def in ["disk=10%", "Disk=10%", "D=10%", "d=10%"] {
        let s = slots(
            &format!("SLOT_TYPE_1 = {def}\nNUM_SLOTS_TYPE_1 = 1\n"),
            &eight_cores(),
        );
        assert!(close(s[0].disk_fraction, 0.1), "{def}");
    }
}

#[test]
fn automatic_shares_of_custom_resources_go_to_the_first_slots() {
    let count = |n: u32, slots_: u32| {
        slots(
            &format!("MACHINE_RESOURCE_Widgets = {n}\nNUM_SLOTS = {slots_}\n"),
            &eight_cores(),
        )
        .iter()
        .map(|s| s.resources.custom("Widgets").unwrap().amount)
        .collect::<Vec<_>>()
    };
    assert_eq!(count(5, 8), [1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0]);
    assert_eq!(count(10, 4), [3.0, 3.0, 2.0, 2.0]);
}

#[test]
fn resources_with_ids_are_bound_to_slots_in_order() {
    let s = slots(
        "MACHINE_RESOURCE_GPUs = CUDA0, CUDA1, CUDA2\nOFFLINE_MACHINE_RESOURCE_GPUs = CUDA1\nNUM_SLOTS = 2\n",
        &eight_cores(),
    );
    assert_eq!(s[0].resources.custom("GPUs").unwrap().ids, ["CUDA0"]);
    assert_eq!(s[1].resources.custom("GPUs").unwrap().ids, ["CUDA2"]);
}

#[test]
fn slot_names_take_the_configured_prefix() {
    let s = slots(
        "STARTD_RESOURCE_PREFIX = node\nNUM_SLOTS_TYPE_1 = 1\nNUM_SLOTS_TYPE_2 = 1\nSLOT_TYPE_2_NAME_PREFIX = big\n",
        &eight_cores(),
    );
    assert_eq!(s[0].name, "node1");
    assert_eq!(s[1].name, "big2");
}

#[test]
fn slot_types_beyond_max_slot_types_are_ignored_with_a_warning() {
    let (_, l) = try_layout(
        "NUM_SLOTS_TYPE_1 = 1\nSLOT_TYPE_11 = 50%\nNUM_SLOTS_TYPE_11 = 1\n",
        &eight_cores(),
    )
    .unwrap();
    assert_eq!(l.slots.len(), 1);
    assert!(l
        .warnings
        .contains(&"SLOT_TYPE_11 is ignored: MAX_SLOT_TYPES is 10".to_string()));
    let s = slots(
        "MAX_SLOT_TYPES = 11\nNUM_SLOTS_TYPE_1 = 1\nSLOT_TYPE_11 = 50%\nNUM_SLOTS_TYPE_11 = 1\n",
        &eight_cores(),
    );
    assert_eq!(s.len(), 2);
    assert_eq!(s[1].slot_type, Some(11));
}

#[test]
fn slots_are_numbered_across_types_in_type_order() {
    let s = slots(
        "NUM_SLOTS_TYPE_2 = 2\nNUM_SLOTS_TYPE_1 = 1\nSLOT_TYPE_1 = 50%\n",
        &eight_cores(),
    );
    let ids: Vec<(u32, Option<u32>)> = s.iter().map(|s| (s.id, s.slot_type)).collect();
    assert_eq!(ids, [(1, Some(1)), (2, Some(2)), (3, Some(2))]);
    assert_eq!(s[0].resources.cpus, 4.0);
    assert_eq!(s[1].resources.cpus, 2.0);
}

#[test]
fn disk_and_swap_follow_the_free_space() {
    let mut s = slots("NUM_SLOTS = 2\n", &eight_cores()).remove(0);
    s.refresh(1001, 99);
    // Disk rounds up, swap down, as HTCondor computes them.
    assert_eq!((s.resources.disk, s.resources.swap), (501, 49));
}

/// HTCondor 25 makes type 0 partitionable by default; the manual (and
/// ferrocondor) divide the machine per core unless told so.
#[test]
fn type_zero_can_be_one_partitionable_slot() {
    let s = slots("SLOT_TYPE_0_PARTITIONABLE = true\n", &eight_cores());
    assert_eq!(s.len(), 1);
    assert!(s[0].partitionable);
    assert_eq!(s[0].slot_type, None);
    assert_eq!(shares(&s[0]), (8.0, 16384, 1.0, 1.0));
}

#[test]
fn negative_slot_counts_are_refused() {
    assert_eq!(
        error("NUM_SLOTS_TYPE_1 = -1\n", &eight_cores()),
        "NUM_SLOTS_TYPE_1: -1 slots: the number must not be negative"
    );
    assert_eq!(
        error("NUM_SLOTS = -1\n", &eight_cores()),
        "NUM_SLOTS: -1 slots: the number must not be negative"
    );
}

/// Slots are named after the startd: `slotN@host`, or, with STARTD_NAME,
/// `slotN@NAME@host` as HTCondor builds daemon names (a name with an `@`
/// is taken as written); `Machine` stays the host's name.
#[test]
fn slots_are_named_after_the_startd_and_startd_name_gives_it_a_name_of_its_own() {
    let names = |text: &str| -> Vec<(String, String)> {
        let s = startd::Startd::from_config(&config(text), "ep.example.org", &eight_cores(), 0)
            .unwrap_or_else(|e| panic!("{e}"));
        let mut s = s;
        s.published_ads(0)
            .iter()
            .map(|a| {
                let t = |n: &str| {
                    let v = a.eval_attr(n, &classad::Env::default());
                    v.as_str().unwrap_or_default().to_string()
                };
                (t("Name"), t("Machine"))
            })
            .collect()
    };
    let plain = names("NUM_CPUS = 2\n");
    assert_eq!(plain[0].0, "slot1@ep.example.org");
    assert_eq!(plain[1].0, "slot2@ep.example.org");
    let named = names("NUM_CPUS = 2\nSTARTD_NAME = ep1\n");
    assert_eq!(
        named[0],
        ("slot1@ep1@ep.example.org".into(), "ep.example.org".into())
    );
    let full = names("NUM_CPUS = 1\nSTARTD_NAME = exec@site\n");
    assert_eq!(full[0].0, "slot1@exec@site");
    assert_eq!(startd::publish::daemon_name("", "h"), "h");
}
