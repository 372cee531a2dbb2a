//! The npm package's TypeScript declarations (`npm/sfn-local/index.d.ts`) accept the code its
//! users copy (#37): every `js` block of the package's README and the examples' suites and
//! configurations are type-checked against them with `tsc --noEmit` (TypeScript from
//! `.ci/deps`), as ts-jest's default type checking and an editor do.
//!
//! Regression (#37): the README's own pattern, `waitForTaskToken(connect(), ...)`, was a
//! TS2345 error, so `tsc` and ts-jest failed on a project that followed it.

mod common;

use common::deps_node_modules;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Names the README's blocks share (a block uses `sfn` from the one before), and Jest's
/// globals as `@jest/globals` types them.
const PRELUDE: &str = r#"// @ts-check
/** @type {import("@aws-sdk/client-sfn").SFNClient} */
const sfn = /** @type {any} */ (undefined);
"#;

const JEST_GLOBALS: &str = r#"declare const test: typeof import("@jest/globals").test;
declare const expect: typeof import("@jest/globals").expect;
declare const describe: typeof import("@jest/globals").describe;
declare const beforeAll: typeof import("@jest/globals").beforeAll;
declare const afterAll: typeof import("@jest/globals").afterAll;
"#;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The `js` code blocks of a Markdown file.
fn js_blocks(markdown: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in markdown.lines() {
        match (&mut current, line.trim_start()) {
            (None, l) if l == "```js" || l == "```javascript" => current = Some(String::new()),
            (Some(block), "```") => {
                blocks.push(std::mem::take(block));
                current = None;
            }
            (Some(block), _) => {
                block.push_str(line);
                block.push('\n');
            }
            _ => {}
        }
    }
    blocks
}

/// The project `tsc` checks: the README's blocks (each in an async function, for its top-level
/// `await`) and copies of the examples, `sfn-local` resolved to the package's folder.
fn project(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let readme = std::fs::read_to_string(root().join("npm/sfn-local/README.md")).unwrap();
    for (i, block) in js_blocks(&readme).iter().enumerate() {
        let file = dir.join(format!("readme-{i}.js"));
        std::fs::write(&file, format!("{PRELUDE}(async () => {{\n{block}}})();\n")).unwrap();
        files.push(file);
    }
    for example in [
        "npm/example/approval.test.js",
        "npm/example/jest.config.js",
        "tests/sam_app/orders.test.js",
        "tests/sam_app/jest.config.js",
    ] {
        let name = example.replace('/', "-");
        let file = dir.join(name);
        let code = std::fs::read_to_string(root().join(example)).unwrap();
        std::fs::write(&file, format!("// @ts-check\n{code}")).unwrap();
        files.push(file);
    }
    let globals = dir.join("jest-globals.d.ts");
    std::fs::write(&globals, JEST_GLOBALS).unwrap();
    files.push(globals);
    files
}

#[test]
fn the_declarations_type_check_the_readmes_and_the_examples_code() {
    let dir = tempfile::tempdir().unwrap();
    let files = project(dir.path());
    let modules = deps_node_modules();
    let config = serde_json::json!({
        "compilerOptions": {
            "allowJs": true, "checkJs": true, "noEmit": true, "strict": true,
            "target": "es2022", "module": "commonjs", "moduleResolution": "node10",
            "types": ["node"], "typeRoots": [modules.join("@types")], "skipLibCheck": true,
            "baseUrl": ".",
            "paths": {"sfn-local": [root().join("npm/sfn-local")], "*": [modules.join("*")]}
        },
        "files": files,
    });
    std::fs::write(dir.path().join("tsconfig.json"), config.to_string()).unwrap();
    let tsc = Command::new("node")
        .arg(modules.join("typescript/bin/tsc"))
        .args(["--project", "tsconfig.json", "--pretty", "false"])
        .current_dir(dir.path())
        .output()
        .expect("run tsc");
    let said = String::from_utf8_lossy(&tsc.stdout);
    assert!(
        tsc.status.success(),
        "tsc --noEmit:\n{said}{}",
        String::from_utf8_lossy(&tsc.stderr)
    );
    assert!(files.len() >= 6, "{files:?}");
}
