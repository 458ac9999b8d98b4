"""The standard library and NumPy as the reader's browser gets them: smaller, same code.

The first Run downloads the standard library's zip and NumPy's wheel (over half of what it
fetches). Both are repacked here, deterministically (the same bytes for the same inputs):

* without the files no code can use in the browser: for NumPy its C headers, static
  libraries, Cython declarations, type stubs, f2py (it needs a Fortran compiler), its
  PyInstaller hook and the extension modules only its own tests import (not
  ``_multiarray_tests``: NumPy documents a function of it at startup); for the standard
  library the modules that need processes or sockets, which the WebAssembly runtime does
  not have (multiprocessing, the mail, news, FTP and telnet clients, the HTTP and XML-RPC
  servers), the modules Python 3.12 deprecated and 3.13 removed (PEP 594), the pure-Python
  twins of ``datetime`` and ``io`` (the runtime has the C ones), modules for Windows and
  macOS only, and the code pages of DOS, EBCDIC and classic Mac OS (``cp437`` stays:
  ``zipfile`` reads names with it);
* stored rather than compressed member by member, then gzipped as a whole (the worker
  decompresses it): one stream compresses the many small files better.

What NumPy imports at startup and every page's blocks run in the browser
(tests/site/test_run_in_page.py); tests/site/test_run_in_page_plan.py checks the totals.
"""

from __future__ import annotations

import gzip
import io
import re
import zipfile

NUMPY_UNUSED = re.compile(r"""
    \.(pyi|pxd|pyx|h|c|a|pc|ini)$ | /py\.typed$
  | ^numpy/(f2py|_pyinstaller|random/_examples|_core/include|_core/lib|random/lib)/
  | ^numpy/_core/_(umath_tests|rational_tests|operand_flag_tests|struct_ufunc_tests
                   |simd)\.[^/]*\.so$
""", re.X)

_PEP_594 = "aifc cgi cgitb chunk crypt imghdr mailcap nntplib pipes sndhdr sunau telnetlib uu xdrlib"
_NO_SOCKETS = "smtplib imaplib poplib ftplib http/server xmlrpc/server wsgiref/simple_server"
_NO_PROCESSES = "concurrent/futures/process pty tty"  # tty needs termios, absent here
_C_TWINS = "_pydatetime _pyio"
_OTHER_SYSTEMS = "asyncio/windows_events asyncio/windows_utils ctypes/_aix encodings/mbcs encodings/oem"
_CODE_PAGES = " ".join(f"encodings/{name}" for name in (
    "cp037 cp273 cp424 cp500 cp875 cp1026 cp1140 "  # EBCDIC
    "cp720 cp737 cp775 cp850 cp852 cp855 cp856 cp857 cp858 cp860 cp861 cp862 cp863 cp864 "
    "cp865 cp866 cp869 cp1006 cp1125 "  # DOS and OS/2 (not cp437)
    "mac_arabic mac_croatian mac_cyrillic mac_farsi mac_greek mac_iceland mac_latin2 "
    "mac_roman mac_romanian mac_turkish hp_roman8 palmos").split())
STDLIB_UNUSED = re.compile(
    r"^(multiprocessing/|ctypes/macholib/|(%s)\.py$)" % "|".join(
        " ".join([_PEP_594, _NO_SOCKETS, _NO_PROCESSES, _C_TWINS, _OTHER_SYSTEMS,
                  _CODE_PAGES]).split()))


def repack(data: bytes, unused: re.Pattern) -> tuple[bytes, list[str]]:
    """The zip ``data`` without the members whose names ``unused`` finds, stored, with
    fixed dates, gzipped: (its bytes, the names left out). A wheel's RECORD keeps the
    rows of the files that remain."""
    kept, dropped = io.BytesIO(), []
    with zipfile.ZipFile(io.BytesIO(data)) as source, \
            zipfile.ZipFile(kept, "w", zipfile.ZIP_STORED) as out:
        names = source.namelist()
        dropped = [name for name in names if unused.search(name)]
        for info in source.infolist():
            if info.filename in dropped:
                continue
            member = source.read(info)
            if info.filename.endswith(".dist-info/RECORD"):
                member = b"".join(row for row in member.splitlines(True)
                                  if row.split(b",")[0].decode() not in dropped)
            stored = zipfile.ZipInfo(info.filename, (2020, 1, 1, 0, 0, 0))
            stored.external_attr = info.external_attr
            out.writestr(stored, member)
    return gzip.compress(kept.getvalue(), 9, mtime=0), dropped
