/// <reference types="vitest/config" />
import katex from "katex";
import { defineConfig, type Plugin } from "vite";

// The page's fixed math (elements with data-tex in index.html) is typeset at build time, so the browser
// does not spend its first few hundred milliseconds running KaTeX on it (src/statics.ts handles any left).
function staticTex(): Plugin {
  const unescapeHtml = (s: string) =>
    s
      .replace(/&quot;/g, '"')
      .replace(/&lt;/g, "<")
      .replace(/&gt;/g, ">")
      .replace(/&amp;/g, "&");
  return {
    name: "flashviz-static-tex",
    transformIndexHtml(html) {
      return html.replace(
        /<(span|div) class="tex"( data-display)? data-tex="([^"]*)"><\/\1>/g,
        (_m, tag: string, display: string | undefined, tex: string) =>
          `<${tag} class="tex"${display ?? ""}>${katex.renderToString(unescapeHtml(tex), { displayMode: !!display, throwOnError: true, output: "htmlAndMathml", strict: "ignore" })}</${tag}>`,
      );
    },
  };
}

// The sections are numbered by the page itself, in the order they appear (index.html leaves each `.ch` empty):
// no number written by hand can skip or repeat.
function numberSections(): Plugin {
  return {
    name: "flashviz-number-sections",
    transformIndexHtml(html) {
      let k = 0;
      return html.replace(/<span class="ch"><\/span>/g, () => `<span class="ch">${++k}</span>`);
    },
  };
}

// KaTeX's stylesheet offers each font as woff2, woff and ttf; every browser that runs this page
// takes woff2, so the other two are dropped from the bundle (about 1 MB less in the wheel).
function katexWoff2Only(): Plugin {
  return {
    name: "flashviz-katex-woff2-only",
    enforce: "pre",
    transform(code, id) {
      if (!/katex(\.min)?\.css$/.test(id)) return null;
      return code.replace(/,\s*url\([^)]*\.(woff|ttf)\)\s*format\("(woff|truetype)"\)/g, "");
    },
  };
}

// Two outputs of the one page (`npm run build` makes both, same sources, same entry):
// - the server's (default mode): chunks loaded after the first paint (KaTeX, CodeMirror), fonts as files;
// - `--mode single` (static/single/): one script, one stylesheet with the fonts inside as data: URLs, nothing loaded
//   later, so that Python can inline the page into one HTML file (flashviz export) or a notebook widget's iframe.
export default defineConfig(({ mode }) => ({
  base: "./", // assets load under any mount point
  plugins: [katexWoff2Only(), staticTex(), numberSections()],
  build:
    mode === "single"
      ? {
          outDir: "../src/flashviz/viewer/static/single",
          emptyOutDir: false, // the server's build (run first) emptied static/
          target: "es2022",
          chunkSizeWarningLimit: 1400,
          assetsInlineLimit: () => true, // fonts inside the stylesheet
          cssCodeSplit: false,
          modulePreload: false,
          rolldownOptions: { output: { codeSplitting: false } }, // dynamic imports inlined: one script
        }
      : {
          outDir: "../src/flashviz/viewer/static",
          emptyOutDir: true,
          target: "es2022",
          chunkSizeWarningLimit: 900,
          assetsInlineLimit: 0, // fonts stay files (cacheable), never data: URLs
        },
  test: {
    include: ["test/**/*.test.ts"],
    environment: "node",
  },
}));
