// hf_tokenizer_oracle.mjs: Hugging Face's own tokenizer (tokenizers.js) as
// the oracle of HfTokenizer. usage: node hf_tokenizer_oracle.mjs NODE_MODULES
// MODEL_DIR < texts.jsonl > ids.jsonl: one JSON string in, one JSON array of
// ids out, per line, with the special tokens the file's post-processor adds.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

const [modules, modelDir] = process.argv.slice(2);
const require = createRequire(path.join(modules, "oracle.cjs"));
const { Tokenizer } = require("@huggingface/tokenizers");
const json = JSON.parse(readFileSync(path.join(modelDir, "tokenizer.json"), "utf8"));
const config = JSON.parse(readFileSync(path.join(modelDir, "tokenizer_config.json"), "utf8"));
const tokenizer = new Tokenizer(json, config);
const lines = readFileSync(0, "utf8").split("\n").filter((l) => l.length > 0);
const out = lines.map((l) => JSON.stringify(tokenizer.encode(JSON.parse(l)).ids));
process.stdout.write(out.join("\n") + "\n");
