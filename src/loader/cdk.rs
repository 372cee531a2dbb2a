//! CDK cloud assemblies (`cdk.out`): the stacks `manifest.json` lists (nested assemblies of
//! stages included), else every `*.template.json` in the folder; and the file assets that hold
//! `DefinitionBody.fromFile` definitions, found through the stack's `*.assets.json`.

use super::{
    chosen, template_machines, template_value, LoadError, LoadedFile, MachineName, Options,
};
use std::path::{Path, PathBuf};

/// One stack of an assembly.
#[derive(Debug, Clone)]
pub struct Stack {
    /// The stack's artifact ID (`OrdersStack`), as `cdk.out#OrdersStack/LogicalId` names it.
    pub name: String,
    /// Its template.
    pub template: PathBuf,
}

/// A cloud assembly folder and its stacks.
#[derive(Debug, Clone)]
pub struct Assembly {
    /// The folder, as given.
    pub folder: PathBuf,
    /// Its stacks, in the manifest's order.
    pub stacks: Vec<Stack>,
}

impl Assembly {
    /// The assembly in `folder`, when it is one (a `manifest.json` listing stacks, or
    /// `*.template.json` files).
    pub fn open(folder: &Path) -> Option<Assembly> {
        let mut stacks = Vec::new();
        manifest_stacks(folder, &mut stacks, 0);
        if stacks.is_empty() {
            stacks = template_files(folder);
        }
        (!stacks.is_empty()).then(|| Assembly {
            folder: folder.to_path_buf(),
            stacks,
        })
    }

    /// The state machines of the stacks `want` names (all without it).
    pub fn load(
        &self,
        want: Option<&MachineName>,
        options: Options<'_>,
    ) -> Result<Vec<LoadedFile>, LoadError> {
        let mut all = Vec::new();
        for stack in &self.stacks {
            let text = options
                .reader
                .read(&stack.template)
                .map_err(LoadError::Unreadable)?;
            let Some(value) = template_value(&text, &stack.template.to_string_lossy()) else {
                continue;
            };
            let machines = template_machines(&stack.template, &text, &value, options);
            all.extend(machines.into_iter().map(|f| (Some(stack.name.clone()), f)));
        }
        chosen(self.folder.display().to_string(), all, want)
    }

    /// The stack template whose state machine reads its definition from the asset at `path`.
    pub fn template_naming(&self, path: &Path) -> Option<PathBuf> {
        let same = |a: &Path| same_file(a, path);
        self.stacks.iter().find_map(|stack| {
            let text = super::read_definition_text(&stack.template).ok()?;
            let value = template_value(&text, &stack.template.to_string_lossy())?;
            let names_it = crate::asl::cfn::state_machines(&value)
                .into_iter()
                .any(|m| {
                    matches!(m.source, crate::asl::cfn::DefinitionSource::InS3 { key: Some(k), .. }
                    if asset_file(&stack.template, &k).is_some_and(|a| same(&a)))
                });
            names_it.then(|| stack.template.clone())
        })
    }
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// The stacks `manifest.json` in `folder` lists, nested assemblies (CDK stages) followed a few
/// levels down.
fn manifest_stacks(folder: &Path, out: &mut Vec<Stack>, depth: usize) {
    let Ok(text) = crate::limits::read_text_capped(
        &folder.join("manifest.json"),
        crate::limits::MOCK_FILE_BYTES,
    ) else {
        return;
    };
    let Ok(manifest) = serde_json::from_str::<serde_json::Value>(&text) else {
        return;
    };
    let artifacts = manifest.get("artifacts").and_then(|a| a.as_object());
    for (name, artifact) in artifacts.into_iter().flatten() {
        let properties = &artifact["properties"];
        match artifact["type"].as_str() {
            Some("aws:cloudformation:stack") => {
                if let Some(file) = properties["templateFile"].as_str() {
                    out.push(Stack {
                        name: name.clone(),
                        template: folder.join(file),
                    });
                }
            }
            Some("cdk:cloud-assembly") if depth < 4 => {
                if let Some(dir) = properties["directoryName"].as_str() {
                    manifest_stacks(&folder.join(dir), out, depth + 1);
                }
            }
            _ => {}
        }
    }
}

/// Every `*.template.json` of `folder`, for an assembly without a manifest.
fn template_files(folder: &Path) -> Vec<Stack> {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return Vec::new();
    };
    let mut stacks: Vec<Stack> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let file = e.file_name().to_string_lossy().into_owned();
            let name = file.strip_suffix(".template.json")?.to_owned();
            Some(Stack {
                name,
                template: folder.join(file),
            })
        })
        .collect();
    stacks.sort_by(|a, b| a.name.cmp(&b.name));
    stacks
}

/// The file of a CDK file asset whose S3 object key is `key`, as the stack's
/// `*.assets.json` beside the template (in `cdk.out`) lists it.
pub fn asset_file(template: &Path, key: &str) -> Option<PathBuf> {
    let folder = template.parent().unwrap_or(Path::new(""));
    let listing = if folder.as_os_str().is_empty() {
        Path::new(".")
    } else {
        folder
    };
    let manifests = std::fs::read_dir(listing)
        .ok()?
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().ends_with(".assets.json"));
    for manifest in manifests {
        let Ok(text) =
            crate::limits::read_text_capped(&manifest.path(), crate::limits::MOCK_FILE_BYTES)
        else {
            continue;
        };
        let Ok(value) = serde_json::from_str::<serde_json::Value>(&text) else {
            continue;
        };
        let files = value.get("files").and_then(|f| f.as_object());
        for asset in files.into_iter().flat_map(|f| f.values()) {
            let destinations = asset.get("destinations").and_then(|d| d.as_object());
            let same_key = destinations
                .into_iter()
                .flat_map(|d| d.values())
                .any(|d| d["objectKey"] == key);
            if let (true, Some(source)) = (
                same_key,
                asset.pointer("/source/path").and_then(|p| p.as_str()),
            ) {
                return Some(folder.join(source));
            }
        }
    }
    None
}
