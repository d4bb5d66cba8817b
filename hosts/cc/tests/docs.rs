//! docs/algorithms.md must list every parameter with the default the
//! registry actually uses, under the algorithm's own heading; a variant's
//! section names its algorithm and lists the defaults it changes.

use std::path::Path;

#[test]
fn every_parameter_and_default_is_documented() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/algorithms.md");
    let doc = match std::fs::read_to_string(&path) {
        Ok(d) => d,
        Err(e) => panic!("cannot read {}: {e}", path.display()),
    };
    let all = cc::list();
    for info in &all {
        let heading = format!("## {}", info.name);
        let start = doc
            .lines()
            .position(|l| l == heading || l.starts_with(&format!("{heading} ")))
            .unwrap_or_else(|| panic!("no section '{heading}'"));
        let section: Vec<&str> = doc.lines().skip(start + 1).take_while(|l| !l.starts_with("## ")).collect();
        let base = info.variant_of.map(|b| all.iter().find(|a| a.name == b).expect("a variant's algorithm is listed"));
        if let Some(b) = base {
            let named = format!("`{}`", b.name);
            assert!(section.iter().any(|l| l.contains(&named)), "{}: its section does not name {named}", info.name);
        }
        for p in &info.params {
            let same_as_base = base.is_some_and(|b| b.params.iter().any(|q| q.name == p.name && q.default == p.default));
            if same_as_base {
                continue;
            }
            let row = format!("| `{}` | `{}` |", p.name, p.default);
            assert!(section.iter().any(|l| l.starts_with(&row)), "{}: missing row starting '{row}'", info.name);
        }
        assert!(doc.contains(&format!("`{}`", info.name)), "{} not in the summary table", info.name);
    }
}
