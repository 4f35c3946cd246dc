/**
 * Python's `str.strip` family in chat templates. Expected values are CPython 3's results for the
 * same calls (`'\n\n x \n'.lstrip('\n') == ' x \n'`, ...), which jinja2 templates get.
 */
import { strictEqual as equal, throws } from "node:assert/strict";
import { EngineError } from "../contract/errors.ts";
import { ChatTemplate } from "./chat.ts";
import { pythonStrip } from "./template_strings.ts";

const invalid = (e: unknown) => e instanceof EngineError && e.type === "InvalidArgument";

Deno.test("pythonStrip: chars name what to remove; without them, Python's whitespace", () => {
  equal(pythonStrip("\n\n x \n", "\n", "left"), " x \n");
  equal(pythonStrip("\n\n x \n", "\n", "right"), "\n\n x ");
  equal(pythonStrip("xyhixy", "yx", "both"), "hi");
  equal(pythonStrip("abc", "", "both"), "abc");
  // A surrogate pair is one character, to remove whole or not at all.
  equal(pythonStrip("🔥ab🔥", "🔥", "both"), "ab");
  equal(pythonStrip("🔥ab🔥", "\ud83d", "both"), "🔥ab🔥");
  // U+0085 and U+001C are whitespace to Python; U+FEFF is not (JavaScript's trim disagrees).
  equal(pythonStrip("\x85\x1c a\u3000\ufeff", null, "both"), "a\u3000\ufeff");
  equal(pythonStrip(" \t\n", null, "both"), "");
});

Deno.test("templates' strip, lstrip, rstrip and trim follow Python", () => {
  const render = (source: string, s: string) =>
    new ChatTemplate(source).render([{ role: "user", content: s }]);
  const content = "{{ messages[0].content";
  equal(
    render(`${content}.lstrip('\\n') }}|${content}.rstrip('\\n') }}`, "\n a \n"),
    " a \n|\n a ",
  );
  equal(render(`${content}.strip(none) }}|${content}.strip() }}`, "\x85 a\u2003"), "a|a");
  equal(render(`${content} | trim('x') }}|${content} | trim }}`, "xx a xx"), " a |xx a xx");
  equal(render(`${content} | trim(chars='x') }}`, "xx a xx"), " a ");
  // A variable holding a string keeps Python's methods wherever it is read.
  equal(
    render(`{% set s = messages[0].content %}{{ s.strip('-') }}{{ s.lstrip('-') }}`, "-a-"),
    "aa-",
  );
  throws(() => render(`${content}.strip(1) }}`, "a"), invalid);
  throws(() => render(`${content}.strip('a', 'b') }}`, "a"), invalid);
});
