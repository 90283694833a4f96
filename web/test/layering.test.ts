// The web viewer's layers, read off the import statements of every file under web/src (with TypeScript's own parser;
// nothing is imported or run): each file in one layer of LAYERS, none importing a layer above its own, and no import
// cycle, neither among the imports that run (dynamic import() included) nor among all of them (`import type` too).
// The Python side's tests/test_layering.py holds the package's layers the same way.
import ts from "typescript";
import { describe, expect, it } from "vitest";

const RAW = import.meta.glob("../src/**/*.ts", { query: "?raw", import: "default", eager: true }) as Record<string, string>;
/** Each file's text by its path under web/src ("render/ladder.ts"). */
const SOURCES = Object.fromEntries(Object.entries(RAW).map(([path, text]) => [path.replace(/^\.\.\/src\//, ""), text]));
const FILES = Object.keys(SOURCES).sort();

/** The layers by role, lowest first: a file may import its own layer and those below it. A name ending in "/" is a
 *  folder (every file under it). */
const LAYERS: { name: string; files: string[] }[] = [
  {
    // the documents the page reads, typed (the profile's and the ladder's with their checks), and how a message quotes
    // a value (echo.ts): they import nothing else
    name: "documents",
    files: ["types.ts", "hardwareDoc.ts", "scheduleDoc.ts", "compareDoc.ts", "launch.ts", "ladderDoc.ts", "profileSchema.ts", "echo.ts"],
  },
  {
    // pure functions of a trace, the state and its reducer, the form's checks, the checks of a trace, DOM builders
    name: "helpers",
    files: [
      "format.ts",
      "codec.ts",
      "colors.ts",
      "geometry.ts",
      "picture.ts",
      "derive.ts",
      "hbm.ts",
      "layout.ts",
      "layoutBoxes.ts",
      "layoutCells.ts",
      "layoutHbm.ts",
      "layoutSram.ts",
      "hitTest.ts",
      "labels.ts",
      "dom.ts",
      "validate.ts",
      "state.ts",
      "traceShape.ts",
      "traceCheck.ts",
    ],
  },
  // the views: each draws what it is handed (the transport bar too), and neither fetches nor reads a source
  { name: "views", files: ["render/", "transport.ts"] },
  // where the documents come from: the server's API, a page's inlined documents or the widget, arrays on demand
  { name: "sources", files: ["api.ts", "source.ts", "onDemand.ts"] },
  // the page's sections built from the views, its theme, its fixed math
  { name: "page", files: ["sections.ts", "theme.ts", "statics.ts"] },
  // the app: its parts (app/), app.ts wiring them, main.ts starting it
  { name: "app", files: ["app/", "app.ts", "main.ts"] },
];

const inLayer = (file: string, entry: string) => (entry.endsWith("/") ? file.startsWith(entry) : file === entry);

/** The rank of a file's layer in LAYERS, or -1 when no layer holds it. */
function layerOf(file: string): number {
  return LAYERS.findIndex((l) => l.files.some((e) => inLayer(file, e)));
}

/** Where `spec`, imported by `file`, lands under web/src ("render/ladder.ts"); null for a package, a stylesheet or a
 *  JSON file; undefined for a relative module that is no file here. */
function resolve(file: string, spec: string): string | null | undefined {
  if (!spec.startsWith(".")) return null;
  const parts = file.split("/").slice(0, -1);
  for (const p of spec.split("/")) {
    if (p === "..") parts.pop();
    else if (p !== ".") parts.push(p);
  }
  const path = parts.join("/");
  if (/\.(css|json)$/.test(path) || path.startsWith("..")) return null;
  return [path, `${path}.ts`, `${path}/index.ts`].find((p) => p in SOURCES);
}

interface Import {
  target: string;
  /** `import type`, `export type ... from`, or every name imported marked `type`: the compiled page does not load it */
  typeOnly: boolean;
}

/** Relative imports that name no file under web/src (the bundler would refuse them; the graph would miss them). */
const UNRESOLVED: string[] = [];

/** The files under web/src that `file` imports: static imports, re-exports and dynamic import()s. */
function importsOf(file: string): Import[] {
  const sf = ts.createSourceFile(file, SOURCES[file]!, ts.ScriptTarget.Latest, false);
  const out: Import[] = [];
  const add = (spec: ts.Expression | undefined, typeOnly: boolean) => {
    if (!spec || !ts.isStringLiteralLike(spec)) return;
    const target = resolve(file, spec.text);
    if (target === undefined) UNRESOLVED.push(`${file} imports ${spec.text}`);
    else if (target !== null) out.push({ target, typeOnly });
  };
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node)) {
      const clause = node.importClause;
      const named = clause?.namedBindings;
      const allTyped = !!named && ts.isNamedImports(named) && named.elements.length > 0 && named.elements.every((e) => e.isTypeOnly);
      add(node.moduleSpecifier, !!clause && (clause.isTypeOnly || (!clause.name && allTyped)));
    } else if (ts.isExportDeclaration(node)) {
      const named = node.exportClause;
      const allTyped = !!named && ts.isNamedExports(named) && named.elements.length > 0 && named.elements.every((e) => e.isTypeOnly);
      add(node.moduleSpecifier, node.isTypeOnly || allTyped);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      add(node.arguments[0], false);
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) {
      add(node.argument.literal as ts.Expression, true); // `import("./x").T` in a type
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return out;
}

const IMPORTS = Object.fromEntries(FILES.map((f) => [f, importsOf(f)]));
/** The imports that run (what the bundle loads) and all of them (what tsc reads). */
const GRAPHS = {
  run: Object.fromEntries(FILES.map((f) => [f, [...new Set(IMPORTS[f]!.filter((i) => !i.typeOnly).map((i) => i.target))]])),
  typed: Object.fromEntries(FILES.map((f) => [f, [...new Set(IMPORTS[f]!.map((i) => i.target))]])),
};

/** Every cycle found by a depth-first walk (one per back edge), each as "a -> b -> a". */
function cycles(edges: Record<string, string[]>): string[] {
  const state = new Map<string, 1 | 2>(); // 1: on the path, 2: done
  const path: string[] = [];
  const found: string[] = [];
  const visit = (node: string): void => {
    state.set(node, 1);
    path.push(node);
    for (const next of [...(edges[node] ?? [])].sort()) {
      if (state.get(next) === 1) found.push([...path.slice(path.indexOf(next)), next].join(" -> "));
      else if (!state.has(next)) visit(next);
    }
    path.pop();
    state.set(node, 2);
  };
  for (const f of Object.keys(edges).sort()) if (!state.has(f)) visit(f);
  return found;
}

describe("the web's layers", () => {
  it("reads the imports there are (a reader that saw none would pass every test below)", () => {
    expect(GRAPHS.run["main.ts"]).toContain("app.ts");
    expect(GRAPHS.run["render/codeLazy.ts"]).toContain("render/code.ts"); // a dynamic import()
    expect(GRAPHS.run["sections.ts"]).toContain("render/memory/view.ts"); // a folder below
    expect(GRAPHS.run["sections.ts"]).not.toContain("source.ts"); // `import type { Source }` only ...
    expect(GRAPHS.typed["sections.ts"]).toContain("source.ts"); // ... which the typed graph counts
    expect(cycles({ "a.ts": ["b.ts"], "b.ts": ["a.ts"] })).toEqual(["a.ts -> b.ts -> a.ts"]);
    expect(UNRESOLVED).toEqual([]); // every relative import is a file here
  });

  it("holds every file in one layer, and every file a layer names exists", () => {
    expect(FILES.filter((f) => layerOf(f) < 0)).toEqual([]); // a new file: add it to its layer in LAYERS
    const named = LAYERS.flatMap((l) => l.files).filter((e) => !FILES.some((f) => inLayer(f, e)));
    expect(named).toEqual([]);
    for (const f of FILES) expect(LAYERS.filter((l) => l.files.some((e) => inLayer(f, e))).map((l) => l.name)).toHaveLength(1);
  });

  it("imports no layer above a file's own (type-only imports included)", () => {
    const up = FILES.flatMap((f) =>
      GRAPHS.typed[f]!.filter((t) => layerOf(t) > layerOf(f)).map(
        (t) => `${f} (${LAYERS[layerOf(f)]?.name}) -> ${t} (${LAYERS[layerOf(t)]?.name})`,
      ),
    );
    expect(up).toEqual([]);
  });

  it("keeps the layers below the views out of render/, and render/ out of the app", () => {
    // what the order above implies, said for the two arrows that went wrong before
    const views = LAYERS.findIndex((l) => l.name === "views");
    const below = FILES.filter((f) => layerOf(f) < views && GRAPHS.typed[f]!.some((t) => t.startsWith("render/")));
    const app = LAYERS.findIndex((l) => l.name === "app");
    const reaching = FILES.filter((f) => f.startsWith("render/") && GRAPHS.typed[f]!.some((t) => layerOf(t) === app));
    expect({ below, reaching }).toEqual({ below: [], reaching: [] });
  });

  it.each(["run", "typed"] as const)("has no import cycle (%s)", (graph) => {
    expect(cycles(GRAPHS[graph])).toEqual([]);
  });
});
