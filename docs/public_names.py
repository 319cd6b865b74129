"""A griffe extension for the API reference (mkdocs.yml): evalproto's public names,
which the package imports on first use (`evalproto.__getattr__`), are shown where users
reach them (`evalproto.load`), each as an alias of the object that defines it."""

from __future__ import annotations

from typing import Any

import griffe


class PublicNames(griffe.Extension):
    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        if pkg.path != "evalproto":
            return
        import evalproto

        for name, (module, attribute) in getattr(evalproto, "_PUBLIC", {}).items():
            if name not in pkg.members:
                pkg.set_member(name, griffe.Alias(name, f"{module}.{attribute}", parent=pkg))
