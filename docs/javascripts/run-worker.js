// Python for the page's code blocks: Pyodide in a Web Worker (see run-in-page.js).
//
// The worker loads the runtime, NumPy and the course's package from the site itself
// (assets/pyodide/, written at build time by tools/run_in_page.py), keeps one namespace
// per page, and what the page left of the state pages share (NumPy's print options, the
// global random generators), and runs one block at a time, returning what it printed.
// Running in a worker keeps the page responsive; a runaway loop is stopped by
// terminating the worker.

let ready = null;

const PRELUDE = `
import contextlib, importlib.abc, importlib.machinery, io, sys, traceback, types

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
_namespaces = {}

import random
import numpy as np

_PRINT_OPTIONS = np.get_printoptions()
_states = {}  # page -> what it left of the state all pages share

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

def _run(page, code):
    namespace = _namespaces.setdefault(page, {"__name__": "__main__"})
    out = io.StringIO()
    _enter(page)
    try:
        compiled = compile(code, "<block>", "exec")
        with contextlib.redirect_stdout(out):
            exec(compiled, namespace)
    except BaseException:
        kind, error, tb = sys.exc_info()
        return out.getvalue(), "".join(traceback.format_exception_only(kind, error)).strip()
    finally:
        _leave(page)
    return out.getvalue(), None

def _reset(page):
    _namespaces.pop(page, None)
    _states.pop(page, None)
`;

async function start(base) {
  importScripts(base + "pyodide.js");
  const manifest = await (await fetch(base + "manifest.json")).json();
  const pyodide = await loadPyodide({ indexURL: base });
  await pyodide.loadPackage(manifest.wheels.map((name) => base + name));
  pyodide.runPython(PRELUDE);
  return pyodide;
}

self.onmessage = async (event) => {
  const { id, type, base, page, code } = event.data;
  try {
    if (!ready) {
      self.postMessage({ type: "status", text: "Loading Python and NumPy…" });
      ready = start(base);
    }
    const pyodide = await ready;
    if (type === "reset") {
      pyodide.globals.get("_reset")(page);
      self.postMessage({ id, ok: true, stdout: "", error: null });
      return;
    }
    const result = pyodide.globals.get("_run")(page, code).toJs();
    self.postMessage({ id, ok: result[1] === undefined || result[1] === null,
                       stdout: result[0], error: result[1] ?? null });
  } catch (error) {
    self.postMessage({ id, ok: false, stdout: "", error: String(error) });
  }
};
