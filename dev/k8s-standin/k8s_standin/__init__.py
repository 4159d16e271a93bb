"""A stand-in for the controllers of a Kubernetes cluster that cannot run on 1.20, for dev/k8s.

It plays JobSet's controller (with the batch Job controller's Indexed mode under it) and
CodeFlare's AppWrapper controllers (MCAD v2 and the AppWrapper controller), whose pods
run on the real node dev/k8s starts; ``dns`` feeds that node's cluster DNS. See the
README next to this package for why each is played and where it differs from the real
components.
"""
