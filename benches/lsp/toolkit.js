// The AWS Toolkit's language service (npm amazon-states-language-service, what VS Code runs for
// .asl.json) on the same definitions and the same edit as benches/lsp.py gives sfn-local:
// milliseconds from an edit to its diagnostics, in process (parse + doValidation; no IPC, no
// debounce, which only flatters it). Prints one JSON object: {file: [ms, ...]}.
const fs = require("fs");
const { getLanguageService, TextDocument } = require("amazon-states-language-service");

async function main() {
  const [edits, ...files] = process.argv.slice(2);
  const service = getLanguageService({});
  const out = {};
  for (const file of files) {
    const good = fs.readFileSync(file, "utf8");
    const bad = good.replace('"Next": "S1"', '"Next": "S1x"');
    const times = [];
    for (let i = 0; i <= Number(edits); i++) {
      const text = i % 2 ? bad : good;
      const doc = TextDocument.create("file://" + file, "asl", i + 1, text);
      const start = process.hrtime.bigint();
      const json = service.parseJSONDocument(doc);
      const diagnostics = await service.doValidation(doc, json);
      const ms = Number(process.hrtime.bigint() - start) / 1e6;
      if (i > 0) times.push(ms); // the first is a warm-up
      if (i % 2 && !diagnostics.length) throw new Error(`${file}: the typo was not reported`);
    }
    out[file] = times;
  }
  console.log(JSON.stringify(out));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
