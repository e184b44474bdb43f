"""site_dir.py PREFIX: where `cmake --install` puts the package a2a for this Python.

Prints "DIR 1": the first directory of sys.path (or the user site) that lies under PREFIX/lib*
and is a site-packages or dist-packages one (/usr: /usr/lib/python3/dist-packages; /usr/local:
/usr/local/lib/python3.X/dist-packages on Debian; ~/.local: the user site); or "DIR 0" with
PREFIX/lib/python3.X/site-packages when this Python searches nothing under PREFIX.
"""
import os
import site
import sys

prefix = os.path.abspath(sys.argv[1]).rstrip("/") or "/"
paths = list(sys.path)
if site.ENABLE_USER_SITE:
    paths.append(site.getusersitepackages())
for d in paths:
    rel = os.path.relpath(d, prefix)
    if rel.startswith("lib") and d.endswith(("site-packages", "dist-packages")):
        print(d, 1, end="")
        break
else:
    print(os.path.join(prefix, "lib", "python%d.%d" % sys.version_info[:2], "site-packages"), 0,
          end="")
