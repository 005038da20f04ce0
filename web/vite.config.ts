// Two pages build into dist/, which is committed: the fan's page (index.html) and the
// box office's live console for staff (console.html, served at /console). The runner
// embeds them, so running the system needs no Node.js. File names carry content hashes
// and nothing else varies between builds, so a build from the same sources gives the
// same bytes.
import { defineConfig } from "vite";

export default defineConfig({
  base: "/",
  build: {
    outDir: "dist",
    emptyOutDir: true,
    sourcemap: false,
    target: "es2022",
    reportCompressedSize: false,
    rollupOptions: {
      input: {
        index: "index.html",
        console: "console.html",
      },
      // What both pages use (the generated clients, the DOM helpers, the base style)
      // is one chunk, named for what it is rather than for one of its modules.
      output: {
        chunkFileNames: "assets/shared-[hash].js",
        assetFileNames: (asset) => {
          const name = asset.names[0] ?? "";
          const shared = name.endsWith(".css") && !/^(index|console)\.css$/.test(name);
          return shared ? "assets/shared-[hash][extname]" : "assets/[name]-[hash][extname]";
        },
      },
    },
  },
});
