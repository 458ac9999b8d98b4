// Python for the page's code blocks: Pyodide in a Web Worker (see run-in-page.js).
//
// The worker loads the runtime, NumPy and the course's package from the site itself
// (assets/pyodide/, written at build time by tools/site/run_in_page.py), keeps one
// namespace per page, and what the page left of the state pages share (NumPy's print
// options, the global random generators), and runs one block (or computes one live
// figure, attention.interactive, outside every namespace) at a time. What a block
// prints (stdout and stderr, warnings included) is sent to the page while it runs, up to
// a limit. Running in a worker keeps the page responsive; a runaway loop is stopped by
// terminating the worker.
//
// The largest files are served gzipped (the build lists them in manifest.json): every
// request for one of the site's runtime files goes through `fetch` below, which fetches
// the .gz, counts the bytes for the progress shown on the page and decompresses.

let ready = null;

const PRELUDE = `
import builtins, contextlib, importlib.abc, importlib.machinery, io, linecache, math, sys, time
import traceback, types

class _Unavailable:
    """Stands in for a library the browser lacks: importing works, using it says why."""
    def __init__(self, name):
        self._name = name
    def _refuse(self, *args, **kwargs):
        raise ModuleNotFoundError(
            f"{self._name}: {self._name.split('.')[0]} is not available in the browser; "
            "this block's output on the page was checked by the tests")
    __call__ = __iter__ = __enter__ = _refuse
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Unavailable(f"{self._name}.{name}")

class _Missing(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Unavailable(f"{self.__name__}.{name}")

class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Last on the path: a library the browser lacks becomes a stand-in (a missing part
    of the standard library stays missing: code tries such imports and falls back)."""
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] not in sys.stdlib_module_names:
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
    def create_module(self, spec):
        return _Missing(spec.name)
    def exec_module(self, module):
        module.__path__ = []

sys.meta_path.append(_Finder())

def _no_input(prompt=""):
    raise OSError(
        "input() cannot ask you for a value here: the page runs Python in the background, "
        "with no keyboard to read from. Write the value into the code instead "
        "(name = 'Ada' rather than name = input()).")

builtins.input = _no_input
_namespaces = {}

import random
import numpy as np

_PRINT_OPTIONS = np.get_printoptions()
_states = {}  # page -> what it left of the state all pages share
LIMIT = 200_000  # characters of output a block shows; the rest is counted, not shown

def _enter(page):
    """Give the page the state all pages share (NumPy's print options and global generator,
    random's), as it left it, or for a fresh page as the page checker resets it
    (tools/pagecheck/state.py): a reader who runs two pages sees each print as it shows."""
    if page in _states:
        options, np_state, py_state = _states[page]
        np.set_printoptions(**options)
        np.random.set_state(np_state)
        random.setstate(py_state)
    else:
        np.set_printoptions(**_PRINT_OPTIONS)
        np.random.seed(0)
        random.seed(0)

def _leave(page):
    _states[page] = (np.get_printoptions(), np.random.get_state(), random.getstate())

class _Sink:
    """Where a block's stdout and stderr go: sent on to the page in pieces, at most every
    0.1 s, and never more than LIMIT characters in all (the total is still counted)."""
    def __init__(self, emit):
        self.emit, self.pending, self.stream = emit, [], None
        self.shown = self.total = 0
        self.sent = -math.inf  # the first piece goes at once
    def write(self, stream, text):
        self.total += len(text)
        text = text[: max(0, LIMIT - self.shown)]
        if not text:
            return
        if stream != self.stream:
            self.flush()
            self.stream = stream
        self.pending.append(text)
        self.shown += len(text)
        if time.monotonic() - self.sent > 0.1:
            self.flush()
    def flush(self):
        if self.pending:
            self.emit(self.stream, "".join(self.pending))
            self.pending.clear()
        self.sent = time.monotonic()

class _Stream(io.TextIOBase):
    def __init__(self, sink, name):
        self.sink, self.name = sink, name
    def writable(self):
        return True
    def write(self, text):
        self.sink.write(self.name, str(text))
        return len(text)

def _run(page, code, name="<block>", emit=print):
    """Run one block in its page's namespace. Its output goes to emit(stream, text); returns
    (the traceback, or None if it ran, the number of characters printed in all)."""
    namespace = _namespaces.setdefault(page, {"__name__": "__main__"})
    sink = _Sink(emit)
    linecache.cache[name] = (len(code), None, code.splitlines(True), name)  # for tracebacks
    _enter(page)
    error = None
    try:
        compiled = compile(code, name, "exec")
        with (contextlib.redirect_stdout(_Stream(sink, "stdout")),
              contextlib.redirect_stderr(_Stream(sink, "stderr"))):
            exec(compiled, namespace)
    except BaseException:
        kind, value, tb = sys.exc_info()
        # From the block's own frame on: this function's frame says nothing to the reader.
        tb = tb.tb_next if tb is not None and tb.tb_frame.f_code is _run.__code__ else tb
        error = "".join(traceback.format_exception(kind, value, tb)).rstrip("\\n")
    finally:
        _leave(page)
        sink.flush()
    return error, sink.total

def _figure(name, values):
    """A live figure (attention.interactive) as JSON, or the error the reader sees."""
    import attention.interactive as live
    try:
        return live.compute_json(name, values), None
    except ValueError as error:
        return None, str(error)

def _reset(page):
    _namespaces.pop(page, None)
    _states.pop(page, None)
`;

let manifest = null;
const progress = { loaded: 0, total: 0, posted: 0, what: "Python and NumPy" };

function megabytes(bytes) {
  return (bytes / 1e6).toFixed(1);
}

function report(force) {
  const now = performance.now();
  if (!force && now - progress.posted < 100) return;
  progress.posted = now;
  self.postMessage({ type: "status", loaded: progress.loaded, total: progress.total,
                     text: `Downloading ${progress.what}, once: ${megabytes(progress.loaded)}` +
                           ` of ${megabytes(progress.total)} MB` });
}

function counter() {
  return new TransformStream({
    transform(chunk, controller) {
      progress.loaded += chunk.byteLength;
      report(false);
      controller.enqueue(chunk);
    },
  });
}

const plainFetch = self.fetch.bind(self);
let base = "";
// Pyodide does not always reject when one of its files fails to arrive (a failed
// WebAssembly download leaves its promise pending): a failed fetch ends the load here.
let failLoad = null;

// The site's runtime files: counted, and decompressed when the build gzipped them.
self.fetch = async (input, init) => {
  const url = String(input instanceof Request ? input.url : input);
  const name = url.startsWith(base) ? url.slice(base.length) : "";
  const entry = manifest && manifest.files[name];
  if (!entry) return plainFetch(input, init);
  let response;
  try {
    response = await plainFetch(base + (entry.gzip || name));
    if (!response.ok) throw new Error(`${name}: HTTP ${response.status} from the site`);
  } catch (error) {
    if (failLoad) failLoad(error);
    throw error;
  }
  let body = response.body.pipeThrough(counter());
  if (entry.gzip) body = body.pipeThrough(new DecompressionStream("gzip"));
  const type = name.endsWith(".wasm") ? "application/wasm" : "application/octet-stream";
  return new Response(body, { headers: { "Content-Type": type } });
};

async function start() {
  manifest = await (await plainFetch(base + "manifest.json")).json();
  progress.loaded = 0;
  progress.total = manifest.download;
  report(true);
  importScripts(base + "pyodide.js");
  if (typeof _createPyodideModule !== "function") {  // what loadPyodide would load itself
    const text = await (await self.fetch(base + "pyodide.asm.js")).text();
    (0, eval)(text);  // as importScripts would: a classic script, in the global scope
  }
  const pyodide = await loadPyodide({ indexURL: base });
  await pyodide.loadPackage(manifest.wheels.map((name) => base + name));
  report(true);
  self.postMessage({ type: "status", text: "Starting Python…" });
  pyodide.runPython(PRELUDE);
  return pyodide;
}

// Chapter 7's checkpoint, a wheel of its own: fetched once, by the first page that needs it.
let checkpointReady = null;

async function loadCheckpoint(pyodide) {
  const name = manifest.checkpoint;
  progress.what = "chapter 7's trained model";
  progress.total += manifest.files[name].bytes;
  report(true);
  await pyodide.loadPackage([base + name]);
  report(true);
}

self.onmessage = async (event) => {
  const { id, type, page, code, name, figure, values, checkpoint } = event.data;
  let pyodide;
  try {
    if (!ready) {
      base = event.data.base;
      ready = Promise.race([start(), new Promise((_, reject) => { failLoad = reject; })]);
    }
    pyodide = await ready;
    if (checkpoint && !checkpointReady) {
      checkpointReady = Promise.race([loadCheckpoint(pyodide),
                                      new Promise((_, reject) => { failLoad = reject; })]);
    }
    if (checkpoint) await checkpointReady;
    failLoad = null;
  } catch (error) {
    ready = null;  // the next Run tries again (the page also starts a fresh worker)
    checkpointReady = null;
    self.postMessage({ id, type: "done", ok: false, loadFailed: true,
                       error: `Python could not be loaded: ${error}. Press Run to try again.` });
    return;
  }
  try {
    if (type === "reset") {
      pyodide.globals.get("_reset")(page);
      self.postMessage({ id, type: "done", ok: true, error: null, printed: 0 });
      return;
    }
    if (type === "figure") {
      const [result, error] = pyodide.globals.get("_figure")(figure, values).toJs();
      self.postMessage({ id, type: "done", ok: error === null || error === undefined,
                         result: result ?? null, error: error ?? null });
      return;
    }
    const emit = (stream, text) => self.postMessage({ id, type: "output", stream, text });
    const [error, printed] = pyodide.globals.get("_run")(page, code, name, emit).toJs();
    self.postMessage({ id, type: "done", ok: error === null || error === undefined,
                       error: error ?? null, printed, limit: pyodide.globals.get("LIMIT") });
  } catch (error) {
    self.postMessage({ id, type: "done", ok: false, error: String(error) });
  }
};
