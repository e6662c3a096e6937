// Two independent builds, one per app, so the widget's bundle carries nothing of the panel's:
//   vite build --mode widget   -> server/internal/webui/dist/widget
//   vite build --mode panel    -> server/internal/webui/dist/panel
// The output is committed and embedded in the Go binary (go:embed), so it must be
// reproducible: file names carry content hashes only, and nothing time- or path-dependent
// (no sourcemaps, no build stamps) reaches the output.
import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";

const here = fileURLToPath(new URL(".", import.meta.url));

export default defineConfig(({ mode }) => {
  if (mode !== "widget" && mode !== "panel") {
    throw new Error(`build with --mode widget or --mode panel, not ${mode}`);
  }
  return {
    root: `${here}src/${mode}`,
    // Relative asset URLs: the widget is served under whatever path COFFER_WIDGET_URL names.
    base: "./",
    publicDir: false,
    logLevel: "warn",
    resolve: {
      // gen/ts lives outside this package; resolve its runtime imports from our node_modules.
      dedupe: ["@bufbuild/protobuf", "@connectrpc/connect"],
    },
    build: {
      outDir: `${here}../server/internal/webui/dist/${mode}`,
      emptyOutDir: true,
      target: "es2020",
      sourcemap: false,
      modulePreload: false,
      reportCompressedSize: false,
      assetsInlineLimit: 0,
      rollupOptions: {
        output: {
          entryFileNames: "assets/[name]-[hash].js",
          chunkFileNames: "assets/[name]-[hash].js",
          assetFileNames: "assets/[name]-[hash][extname]",
        },
      },
    },
  };
});
