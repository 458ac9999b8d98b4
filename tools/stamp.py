"""The "Tested with" stamp: the date and versions a page was built and checked with.

Read from the running interpreter and installed packages, never typed by hand. The site
hook puts it wherever a page writes ``{{ tested_with }}``.
"""

import datetime
import importlib.metadata
import platform


def tested_with() -> dict[str, str]:
    """Date, Python, NumPy and PyTorch versions, and the platform, as strings."""
    return {
        "date": datetime.date.today().isoformat(),
        "python": platform.python_version(),
        "numpy": importlib.metadata.version("numpy"),
        "torch": importlib.metadata.version("torch").split("+")[0],
        "platform": f"{platform.system()} {platform.machine()}",
    }


def tested_with_line() -> str:
    stamp = tested_with()
    return (
        f"{stamp['date']} · Python {stamp['python']} · NumPy {stamp['numpy']} · "
        f"PyTorch {stamp['torch']} · {stamp['platform']}"
    )
