# SPDX-License-Identifier: Apache-2.0
"""The in-tree PEP 517 build backend of the vkvit package (backend.py)."""
