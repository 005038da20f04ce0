// The page builds into dist/, which is committed: the runner embeds it, so running
// the system needs no Node.js. File names carry content hashes and nothing else
// varies between builds, so a build from the same sources gives the same bytes.
import { defineConfig } from "vite";

export default defineConfig({
  base: "/",
  build: {
    outDir: "dist",
    emptyOutDir: true,
    sourcemap: false,
    target: "es2022",
    reportCompressedSize: false,
  },
});
