// The page: the viewer (app.ts) wired into index.html's body, showing what the page's source holds (source.ts: the
// server that served it, or the documents an export or the notebook widget inlined), and its handle on
// `window.flashviz` for the browser tests and the benchmark.
import "./styles.css";
import { createApp, type ViewerHandle } from "./app";
import { pickSource } from "./source";

declare global {
  interface Window {
    flashviz: ViewerHandle;
  }
}

const app = createApp(document.body, pickSource(document));
// ready whatever the trace held: shown, or said in the config bar (a test waits for this, not for a time)
const markReady = () => {
  document.documentElement.dataset.ready = "true";
};
app.ready.then(markReady, (e: unknown) => {
  markReady();
  throw e;
});
window.flashviz = app;
