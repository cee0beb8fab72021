//! The module graph of `src/` has no cycle: the pipeline's arrows point one way.
//!
//! Edges are read from `crate::` and `super::` paths outside tests and comments, as a reader
//! would follow them; a module using its own ancestor (a child reaching for its parent's types)
//! is not an edge. Two levels are checked: the top-level stages, and every module.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use regex::Regex;

type Graph = BTreeMap<String, BTreeSet<String>>;

/// `compare/mod.rs` → `compare`, `import/trace.rs` → `import::trace`.
fn module_path(relative: &str) -> String {
    let path = relative.trim_end_matches(".rs");
    let path = path.strip_suffix("/mod").unwrap_or(path);
    path.replace('/', "::")
}

/// The module graph of source files given as (path relative to `src/`, text).
fn graph(files: &[(String, String)]) -> Graph {
    let modules: BTreeSet<String> = files.iter().map(|(p, _)| module_path(p)).collect();
    let resolve = |path: &str| -> Option<String> {
        let parts: Vec<&str> = path.split("::").collect();
        (1..=parts.len())
            .rev()
            .map(|k| parts[..k].join("::"))
            .find(|candidate| modules.contains(candidate))
    };
    let crate_path = Regex::new(r"crate::((?:[a-z_0-9]+::)*[A-Za-z_0-9]+)").unwrap();
    let crate_group = Regex::new(r"(?s)use crate::\{([^;]*)\};").unwrap();
    let group_item = Regex::new(r"([a-z_0-9]+(?:::[A-Za-z_0-9]+)*)").unwrap();
    let super_path = Regex::new(r"super::((?:[a-z_0-9]+::)*[A-Za-z_0-9]+)").unwrap();
    let mut out = Graph::new();
    for (relative, text) in files {
        let me = module_path(relative);
        let body = text.split("#[cfg(test)]").next().unwrap_or("");
        let body: String = body
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        let mut targets: Vec<String> = crate_path
            .captures_iter(&body)
            .map(|c| c[1].to_string())
            .collect();
        for group in crate_group.captures_iter(&body) {
            targets.extend(
                group_item
                    .captures_iter(&group[1])
                    .map(|c| c[1].to_string()),
            );
        }
        if let Some((parent, _)) = me.rsplit_once("::") {
            targets.extend(
                super_path
                    .captures_iter(&body)
                    .map(|c| format!("{parent}::{}", &c[1])),
            );
        }
        let edges = out.entry(me.clone()).or_default();
        for target in targets.iter().filter_map(|t| resolve(t)) {
            if target != me && !me.starts_with(&format!("{target}::")) {
                edges.insert(target);
            }
        }
    }
    out
}

/// The graph of top-level modules (stages): an edge where any module of one uses one of the
/// other.
fn stages(g: &Graph) -> Graph {
    let top = |m: &str| m.split("::").next().unwrap_or(m).to_string();
    let mut out = Graph::new();
    for (from, targets) in g {
        for to in targets {
            let (a, b) = (top(from), top(to));
            if a != b && a != "lib" && a != "main" {
                out.entry(a).or_default().insert(b);
            }
        }
    }
    out
}

/// The strongly connected components of more than one node (Tarjan), each sorted.
fn cycles(g: &Graph) -> Vec<Vec<String>> {
    struct State<'a> {
        g: &'a Graph,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        found: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on_stack.insert(v);
        for w in s.g.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !s.index.contains_key(w) {
                visit(s, w);
                let low = s.low[v].min(s.low[w]);
                s.low.insert(v, low);
            } else if s.on_stack.contains(w) {
                let low = s.low[v].min(s.index[w]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.found.push(component);
            }
        }
    }
    let mut s = State {
        g,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    let nodes: BTreeSet<&str> = g
        .iter()
        .flat_map(|(k, v)| std::iter::once(k.as_str()).chain(v.iter().map(String::as_str)))
        .collect();
    for v in nodes {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    s.found
}

fn source_files(root: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let relative = path
                    .strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/");
                out.push((relative, std::fs::read_to_string(&path).unwrap()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn the_module_graph_has_no_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let files = source_files(&src);
    assert!(files.len() > 40, "read {} files", files.len());
    let g = graph(&files);
    let describe = |found: Vec<Vec<String>>, level: &str, g: &Graph| {
        found
            .into_iter()
            .map(|c| {
                let edges: Vec<String> = c
                    .iter()
                    .flat_map(|a| {
                        g.get(a)
                            .into_iter()
                            .flatten()
                            .filter(|b| c.contains(b))
                            .map(move |b| format!("{a} -> {b}"))
                    })
                    .collect();
                format!("{level} cycle {}: {}", c.join(", "), edges.join("; "))
            })
            .collect::<Vec<_>>()
    };
    let mut problems = describe(cycles(&stages(&g)), "stage", &stages(&g));
    problems.extend(describe(cycles(&g), "module", &g));
    assert!(
        problems.is_empty(),
        "imports must point one way (move the shared type below both modules):\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_check_finds_a_cycle_and_ignores_children_using_their_parent() {
    let file = |p: &str, t: &str| (p.to_string(), t.to_string());
    let acyclic = [
        file("lib.rs", "pub mod a; pub mod b;"),
        file("a/mod.rs", "pub mod inner;\nuse crate::b::Thing;\n"),
        file("a/inner.rs", "use super::Parent;\nuse crate::a::Other;\n"),
        file(
            "b.rs",
            "// use crate::a::Commented;\npub struct Thing;\n#[cfg(test)]\nmod tests { use crate::a::X; }\n",
        ),
    ];
    let g = graph(&acyclic);
    assert!(cycles(&g).is_empty(), "{g:?}");
    assert!(cycles(&stages(&g)).is_empty());
    assert!(g["a"].contains("b"));

    let cyclic = [
        file("lib.rs", "pub mod a; pub mod b;"),
        file("a/mod.rs", "pub mod inner;"),
        file("a/inner.rs", "use crate::{b::Thing, a};\n"),
        file("b.rs", "fn f() -> crate::a::inner::Inner { todo!() }\n"),
    ];
    let g = graph(&cyclic);
    assert_eq!(
        cycles(&g),
        vec![vec!["a::inner".to_string(), "b".to_string()]]
    );
    assert_eq!(
        cycles(&stages(&g)),
        vec![vec!["a".to_string(), "b".to_string()]]
    );
}
