"""Report helpers loaded by the test frameworks themselves (a pytest plugin, a node:test reporter).

They run inside the project's own interpreter or node, so they import nothing of graphlemon.
"""
