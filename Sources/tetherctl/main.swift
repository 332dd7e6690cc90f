// tetherctl: being written (issue 14); this placeholder keeps the package building.
print("tetherctl: not built yet")
