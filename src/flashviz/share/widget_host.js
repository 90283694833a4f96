// The notebook widget's host side (flashviz/widget.py): the viewer's page (the one `flashviz export` writes) in a
// sandboxed iframe. The page asks (postMessage), this asks Python (model.send), Python answers (msg:custom, the JSON in
// a buffer), this answers the page. The page says what it shows; the model's `config` and `step` follow (step
// debounced), and a `config` set in Python opens that launch in the page. __PAGE__ and __MARK__ are filled by
// widget.py: the page, and where its documents go.
const PAGE = __PAGE__;
const MARK = __MARK__;
const same = (a, b) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);

function render({ model, el }) {
  const view = Math.random().toString(36).slice(2);
  const frame = document.createElement("iframe");
  frame.setAttribute("sandbox", "allow-scripts allow-forms"); // forms: the config bar submits (the page prevents the navigation)
  frame.setAttribute("title", "flashviz");
  frame.dataset.flashviz = "viewer";
  const size = () => (frame.style.cssText = `width:100%;height:${model.get("height")}px;border:0;display:block`);
  size();
  frame.srcdoc = PAGE.replace(MARK, () => model.get("_documents"));
  el.replaceChildren(frame);
  let shown = model.get("config");
  let stepTimer = 0;
  const onMessage = (e) => {
    if (e.source !== frame.contentWindow) return;
    const m = e.data;
    if (m?.type === "flashviz:ask") {
      model.send({ type: "ask", view, id: m.id, kind: m.kind, config: m.config, block: m.block ?? null });
    } else if (m?.type === "flashviz:shown") {
      if (!same(m.config, shown)) {
        shown = m.config;
        model.set("config", m.config);
        model.set("step", m.step);
        model.save_changes();
      } else if (m.step !== model.get("step")) {
        clearTimeout(stepTimer);
        stepTimer = setTimeout(() => {
          model.set("step", m.step);
          model.save_changes();
        }, 250);
      }
    }
  };
  window.addEventListener("message", onMessage);
  const onAnswer = (msg, buffers) => {
    if (msg?.type !== "answer" || msg.view !== view || !frame.contentWindow) return;
    const text = msg.ok ? new TextDecoder().decode(buffers[0]) : undefined;
    frame.contentWindow.postMessage({ type: "flashviz:answer", id: msg.id, ok: msg.ok, text, detail: msg.detail, field: msg.field }, "*");
  };
  model.on("msg:custom", onAnswer);
  const onConfig = () => {
    const c = model.get("config");
    if (!same(c, shown) && frame.contentWindow) frame.contentWindow.postMessage({ type: "flashviz:open", config: c }, "*");
  };
  model.on("change:config", onConfig);
  model.on("change:height", size);
  return () => {
    window.removeEventListener("message", onMessage);
    model.off("msg:custom", onAnswer);
    model.off("change:config", onConfig);
    model.off("change:height", size);
    clearTimeout(stepTimer);
  };
}

export default { render };
