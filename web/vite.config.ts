/// <reference types="vitest/config" />
import { defineConfig, type Plugin } from "vite";

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

export default defineConfig({
  base: "./", // assets load under any mount point
  plugins: [katexWoff2Only()],
  build: {
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
});
