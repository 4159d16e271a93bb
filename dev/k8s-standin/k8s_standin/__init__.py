"""A stand-in for what a Kubernetes cluster runs besides its API server, for dev/k8s.

It plays Volcano's Job controller, JobSet's controller (with the batch Job controller
under it), CodeFlare's AppWrapper controllers (MCAD v2 and the AppWrapper controller),
the garbage collector, and one node (scheduler and kubelet) that runs pods as
containers on a Docker engine. See the README next to this package for where it differs
from the real components.
"""
