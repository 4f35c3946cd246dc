#!/usr/bin/env python3
"""Expected chat-template renders for Kiln's families, by jinja2 (the renderer HF transformers uses).

Dev-only (not run by `npm test`). Copies each family's chat template, unmodified, from llama.cpp's
`models/templates/` (itself fetched from each model's Hugging Face repository) into
`test/fixtures/chat_templates/`, renders a fixed set of conversations through each with the
environment and variables that transformers' `apply_chat_template` sets up, and writes the inputs
with jinja2's output (or the template's `raise_exception` message) to `expected.json`.

    python3 bench/peers/chat_templates.py [--llama-cpp /tmp/llama.cpp.src] [--out DIR]

The environment reproduces transformers' `_compile_jinja_template` (read, not copied): a sandboxed
environment with `trim_blocks` and `lstrip_blocks`, the `loopcontrols` extension, a `tojson` filter
that keeps non-ASCII characters and key order, and the globals `raise_exception` and
`strftime_now`; the render gets `messages`, `tools`, `documents`, `add_generation_prompt` and the
tokenizer's special-token strings. `strftime_now` reads a fixed clock (FIXED_NOW) so the output is
deterministic; Kiln's test renders with the same clock.
"""

import argparse
import datetime
import hashlib
import json
import pathlib
import shutil
import sys

import jinja2
import jinja2.ext
import jinja2.sandbox

FIXED_NOW = datetime.datetime(2026, 1, 9, 14, 5, 7)
# strftime_now formats checked on their own (the templates use %Y-%m-%d, %d %b %Y, %B %d, %Y).
STRFTIME_DATES = [FIXED_NOW, datetime.datetime(2024, 12, 31, 0, 7, 59)]
STRFTIME = ["%a %A %b %B %d %e %H %I %j %m %M %p %S %y %Y %%", "%Y-%m-%d", "%d %b %Y",
            "%B %d, %Y"]

# family -> (template file in llama.cpp, model repository, license, special-token strings of the
# model's tokenizer_config.json; a token the config leaves null is absent, as in HF's
# special_tokens_map).
FAMILIES = {
    "llama": ("meta-llama-Llama-3.1-8B-Instruct.jinja", "meta-llama/Llama-3.1-8B-Instruct",
              "Llama 3.1 Community License", {"bos_token": "<|begin_of_text|>",
                                              "eos_token": "<|eot_id|>"}),
    "llama3.2": ("meta-llama-Llama-3.2-3B-Instruct.jinja", "meta-llama/Llama-3.2-3B-Instruct",
                 "Llama 3.2 Community License", {"bos_token": "<|begin_of_text|>",
                                                 "eos_token": "<|eot_id|>"}),
    "qwen2": ("Qwen-Qwen2.5-7B-Instruct.jinja", "Qwen/Qwen2.5-7B-Instruct", "Apache-2.0",
              {"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"}),
    "qwen3": ("Qwen-Qwen3-0.6B.jinja", "Qwen/Qwen3-0.6B", "Apache-2.0",
              {"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"}),
    "gemma2": ("google-gemma-2-2b-it.jinja", "google/gemma-2-2b-it", "Gemma Terms of Use",
               {"bos_token": "<bos>", "eos_token": "<eos>", "unk_token": "<unk>",
                "pad_token": "<pad>"}),
    "phi3": ("microsoft-Phi-3.5-mini-instruct.jinja", "microsoft/Phi-3.5-mini-instruct", "MIT",
             {"bos_token": "<s>", "eos_token": "<|endoftext|>", "unk_token": "<unk>",
              "pad_token": "<|endoftext|>"}),
    "smollm3": ("HuggingFaceTB-SmolLM3-3B.jinja", "HuggingFaceTB/SmolLM3-3B", "Apache-2.0",
                {"eos_token": "<|im_end|>", "pad_token": "<|im_end|>"}),
    "granite": ("ibm-granite-granite-3.3-2B-Instruct.jinja", "ibm-granite/granite-3.3-2b-instruct",
                "Apache-2.0", {"bos_token": "<|end_of_text|>", "eos_token": "<|end_of_text|>",
                               "unk_token": "<|end_of_text|>", "pad_token": "<|end_of_text|>"}),
    "mistral": ("mistralai-Mistral-Nemo-Instruct-2407.jinja",
                "mistralai/Mistral-Nemo-Instruct-2407", "Apache-2.0",
                {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"}),
    "mistral3.2": ("Mistral-Small-3.2-24B-Instruct-2506.jinja",
                   "mistralai/Mistral-Small-3.2-24B-Instruct-2506", "Apache-2.0",
                   {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"}),
    "gpt-oss": ("openai-gpt-oss-120b.jinja", "openai/gpt-oss-120b", "Apache-2.0",
                {"bos_token": "<|startoftext|>", "eos_token": "<|return|>",
                 "pad_token": "<|endoftext|>"}),
}

TOOLS = [{
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name, e.g. Zürich"},
                "unit": {"type": "string", "enum": ["c", "f"]},
            },
            "required": ["city"],
        },
    },
}]

SYSTEM = {"role": "system", "content": "You are a terse assistant."}
USER = {"role": "user", "content": "What is a kiln?"}
REPLY = {"role": "assistant", "content": "An oven for firing clay."}
USER2 = {"role": "user", "content": "How hot does it get?"}
NON_ASCII = {"role": "user",
             "content": "Grüße aus Köln — ¿qué tal? 東京 🔥 \"quoted\" back\\slash\ttab"}
CALL = {"role": "assistant", "content": "", "tool_calls": [{
    "id": "call12345", "type": "function",
    "function": {"name": "get_weather", "arguments": {"city": "Zürich", "unit": "c"}}}]}
RESULT = {"role": "tool", "tool_call_id": "call12345", "name": "get_weather",
          "content": "{\"temp\": 21, \"sky\": \"clear\"}"}
WEATHER = {"role": "user", "content": "Weather in Zürich?"}
THOUGHT = {"role": "assistant", "content": "<think>\n Clay needs heat.\n</think>\n\n An oven."}
# Surrounding whitespace that templates `trim`: ASCII, then characters where Python's str.strip
# and JavaScript's String.prototype.trim disagree (U+0085 and U+001F are whitespace to Python
# only, U+FEFF to JavaScript only; U+3000 to both).
PADDED = {"role": "user", "content": " \n\t What is a kiln?\u3000\n "}
PADDED_REPLY = {"role": "assistant", "content": "\n An oven for firing clay. \n"}
UNICODE_SPACE = {"role": "user", "content": "\u0085\u001fWhat is a kiln?\ufeff"}
STRING_ARGS = {**CALL, "tool_calls": [{**CALL["tool_calls"][0], "function": {
    "name": "get_weather", "arguments": "{\"city\": \"Zürich\"}"}}]}


def cases(template: str) -> list[dict]:
    """The conversations rendered through `template` (tool cases where it reads `tools`)."""
    out = [
        {"name": "system_user", "messages": [SYSTEM, USER]},
        {"name": "user_only", "messages": [USER]},
        {"name": "multi_turn", "messages": [SYSTEM, USER, REPLY, USER2]},
        {"name": "multi_turn_no_generation_prompt", "messages": [USER, REPLY],
         "add_generation_prompt": False},
        {"name": "non_ascii", "messages": [NON_ASCII]},
        {"name": "whitespace", "messages": [PADDED, PADDED_REPLY, USER2]},
        {"name": "unicode_whitespace", "messages": [UNICODE_SPACE]},
    ]
    if "tools" in template:
        out += [
            {"name": "tools", "messages": [SYSTEM, WEATHER], "tools": TOOLS},
            {"name": "tool_call_and_result", "messages": [WEATHER, CALL, RESULT], "tools": TOOLS},
            {"name": "tool_call_string_arguments", "messages": [WEATHER, STRING_ARGS, RESULT],
             "tools": TOOLS, "add_generation_prompt": False},
        ]
    if "enable_thinking" in template:
        out += [
            {"name": "thinking_off", "messages": [SYSTEM, USER],
             "variables": {"enable_thinking": False}},
            {"name": "thinking_history", "messages": [USER, THOUGHT, USER2],
             "variables": {"enable_thinking": True}},
            {"name": "thinking_last_turn", "messages": [USER, THOUGHT],
             "add_generation_prompt": False},
        ]
    if "reasoning_content" in template:
        out.append({"name": "reasoning_content", "add_generation_prompt": False, "messages": [
            USER, {**REPLY, "reasoning_content": "Clay needs heat."}]})
    if "message.thinking" in template:
        out.append({"name": "thinking_field", "add_generation_prompt": False, "messages": [
            USER, {**REPLY, "thinking": "Clay needs heat."}]})
    if "reasoning_effort" in template:
        out.append({"name": "reasoning_effort", "messages": [SYSTEM, USER],
                    "variables": {"reasoning_effort": "high"}})
    if "elif thinking" in template:
        out.append({"name": "thinking_flag", "messages": [USER], "variables": {"thinking": True}})
    for c in out:
        c.setdefault("add_generation_prompt", True)
    return out


class TemplateRaised(Exception):
    pass


def environment() -> jinja2.Environment:
    def raise_exception(message):
        raise TemplateRaised(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    env = jinja2.sandbox.ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = FIXED_NOW.strftime
    return env


def render(env: jinja2.Environment, source: str, special: dict, case: dict) -> dict:
    try:
        text = env.from_string(source).render(
            messages=case["messages"], tools=case.get("tools"), documents=None,
            add_generation_prompt=case["add_generation_prompt"], **special,
            **case.get("variables", {}))
        return {"output": text}
    except TemplateRaised as e:
        return {"error": str(e)}


def main() -> None:
    root = pathlib.Path(__file__).resolve().parents[2]
    ap = argparse.ArgumentParser()
    ap.add_argument("--llama-cpp", default="/tmp/llama.cpp.src")
    ap.add_argument("--out", default=str(root / "test/fixtures/chat_templates"))
    args = ap.parse_args()
    src = pathlib.Path(args.llama_cpp) / "models/templates"
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    env = environment()
    families = {}
    for family, (file, repo, license_, special) in FAMILIES.items():
        shutil.copyfile(src / file, out / file)
        data = (out / file).read_bytes()
        source = data.decode("utf-8")
        rendered = [{**c, **render(env, source, special, c)} for c in cases(source)]
        families[family] = {
            "template": file, "sha256": hashlib.sha256(data).hexdigest(), "repo": repo,
            "license": license_, "special_tokens": special, "cases": rendered,
        }
        errors = sum("error" in c for c in rendered)
        print(f"{family}: {len(rendered)} cases, {errors} raised", file=sys.stderr)
    doc = {"renderer": f"jinja2 {jinja2.__version__}", "now": FIXED_NOW.isoformat(),
           "strftime": [{"now": t.isoformat(), "format": f, "output": t.strftime(f)}
                        for t in STRFTIME_DATES for f in STRFTIME],
           "families": families}
    text = json.dumps(doc, ensure_ascii=False, indent=2) + "\n"
    (out / "expected.json").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
