//! The program's named objects besides headers: counters, registers,
//! parser value sets and hash calculations (meters and extern instances
//! are refused), and the field lists that clones, resubmits and
//! recirculations carry.

use super::json::*;
use super::layout::Layout;
use crate::checksum::{algo_by_name, Csum16Plan};
use crate::error::{LoadError, LoadResult};
use crate::ir::{
    Calc, CalcInput, CounterId, CounterInfo, CounterKind, RegisterId, RegisterInfo, ValueSetId, ValueSetInfo,
};
use serde_json::Value;
use std::collections::HashMap;

#[derive(Default)]
pub(super) struct Externs {
    pub counter_infos: Vec<CounterInfo>,
    pub counter_by_name: HashMap<String, usize>,
    pub register_infos: Vec<RegisterInfo>,
    pub register_by_name: HashMap<String, usize>,
    pub vset_infos: Vec<ValueSetInfo>,
    vset_by_name: HashMap<String, usize>,
    pub calcs: Vec<Calc>,
    calc_by_name: HashMap<String, usize>,
}

impl Externs {
    pub fn read(root: &Value, layout: &Layout) -> LoadResult<Externs> {
        if !get_arr(root, "meter_arrays", "root")?.is_empty() {
            return Err(LoadError::unsupported("meter_arrays", "meters"));
        }
        if !get_arr(root, "extern_instances", "root")?.is_empty() {
            let n = name_of(&get_arr(root, "extern_instances", "root")?[0]);
            return Err(LoadError::unsupported("extern_instances", format!("extern instance '{n}'")));
        }
        let mut externs = Externs::default();
        externs.read_counters(root)?;
        externs.read_registers(root)?;
        externs.read_value_sets(root)?;
        externs.read_calculations(root, layout)?;
        Ok(externs)
    }

    fn read_counters(&mut self, root: &Value) -> LoadResult<()> {
        for (i, c) in get_arr(root, "counter_arrays", "root")?.iter().enumerate() {
            let name = get_str(c, "name", "counter_arrays")?.to_string();
            let at = format!("counter '{name}'");
            let is_direct = get_bool_or(c, "is_direct", false);
            let size = if is_direct { c.get("size").and_then(Value::as_u64).unwrap_or(0) } else { get_u64(c, "size", &at)? };
            self.counter_by_name.insert(name.clone(), i);
            self.counter_infos.push(CounterInfo {
                id: CounterId(i),
                name,
                size,
                is_direct,
                kind: CounterKind::PacketsAndBytes,
                table: None,
            });
        }
        Ok(())
    }

    fn read_registers(&mut self, root: &Value) -> LoadResult<()> {
        for (i, r) in get_arr(root, "register_arrays", "root")?.iter().enumerate() {
            let name = get_str(r, "name", "register_arrays")?.to_string();
            let at = format!("register '{name}'");
            let bitwidth = get_u64(r, "bitwidth", &at)?;
            if bitwidth > 128 {
                return Err(LoadError::unsupported(&at, format!("{bitwidth}-bit registers (max 128)")));
            }
            self.register_by_name.insert(name.clone(), i);
            self.register_infos.push(RegisterInfo {
                id: RegisterId(i),
                name,
                size: get_u64(r, "size", &at)?,
                bitwidth: bitwidth as u32,
            });
        }
        Ok(())
    }

    fn read_value_sets(&mut self, root: &Value) -> LoadResult<()> {
        for (i, v) in get_arr(root, "parse_vsets", "root")?.iter().enumerate() {
            let name = get_str(v, "name", "parse_vsets")?.to_string();
            let at = format!("value set '{name}'");
            let bw = get_u64(v, "compressed_bitwidth", &at)?;
            if bw > 128 {
                return Err(LoadError::unsupported(&at, format!("{bw}-bit value sets (max 128)")));
            }
            self.vset_by_name.insert(name.clone(), i);
            self.vset_infos.push(ValueSetInfo { id: ValueSetId(i), name, bitwidth: bw as u32 });
        }
        Ok(())
    }

    fn read_calculations(&mut self, root: &Value, layout: &Layout) -> LoadResult<()> {
        for (i, c) in get_arr(root, "calculations", "root")?.iter().enumerate() {
            let name = get_str(c, "name", "calculations")?.to_string();
            let at = format!("calculation '{name}'");
            let algo_name = get_str(c, "algo", &at)?;
            let algo = algo_by_name(algo_name)
                .ok_or_else(|| LoadError::unsupported(&at, format!("hash algorithm '{algo_name}'")))?;
            let mut inputs = Vec::new();
            for inp in get_arr(c, "input", &at)? {
                let ty = get_str(inp, "type", &at)?;
                inputs.push(match ty {
                    "field" => {
                        let s = layout.slot(get(inp, "value", &at)?, &at)?;
                        CalcInput::Field { slot: s, header: layout.slots[s].header as usize }
                    }
                    "hexstr" => {
                        let bits = get_u64(inp, "bitwidth", &at)?;
                        if bits > 128 {
                            return Err(LoadError::unsupported(&at, "constant input wider than 128 bits"));
                        }
                        CalcInput::Const { value: hex_or_int(get(inp, "value", &at)?, &at)?, bits: bits as u32 }
                    }
                    "header" => CalcInput::Header(layout.header(as_str(get(inp, "value", &at)?, &at)?, &at)?),
                    "payload" => CalcInput::Payload,
                    other => return Err(LoadError::unsupported(&at, format!("calculation input of type '{other}'"))),
                });
            }
            self.calc_by_name.insert(name.clone(), i);
            let csum = Csum16Plan::new(algo, &inputs, |slot| layout.slots[slot].width);
            self.calcs.push(Calc { name, algo, inputs, csum });
        }
        Ok(())
    }

    pub fn counter(&self, name: &str, at: &str) -> LoadResult<usize> {
        lookup(&self.counter_by_name, "counter", name, at)
    }

    pub fn register(&self, name: &str, at: &str) -> LoadResult<usize> {
        lookup(&self.register_by_name, "register", name, at)
    }

    pub fn value_set(&self, name: &str, at: &str) -> LoadResult<usize> {
        lookup(&self.vset_by_name, "value set", name, at)
    }

    pub fn calc(&self, name: &str, at: &str) -> LoadResult<usize> {
        lookup(&self.calc_by_name, "calculation", name, at)
    }
}

/// Field list id -> the slots it carries (constant elements carry nothing).
pub(super) fn field_lists(root: &Value, layout: &Layout) -> LoadResult<HashMap<u64, Vec<usize>>> {
    let mut out = HashMap::new();
    for fl in get_arr(root, "field_lists", "root")? {
        let at = format!("field list '{}'", name_of(fl));
        let id = get_u64(fl, "id", &at)?;
        let mut slots = Vec::new();
        for e in get_arr(fl, "elements", &at)? {
            match get_str(e, "type", &at)? {
                "field" => slots.push(layout.slot(get(e, "value", &at)?, &at)?),
                "hexstr" => {}
                other => return Err(LoadError::unsupported(&at, format!("field list element of type '{other}'"))),
            }
        }
        out.insert(id, slots);
    }
    Ok(out)
}
