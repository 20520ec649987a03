"""The work that leaves a click: the batched forward passes (lm, passes, batching, padding), the long jobs (jobs,
tickets), where they run (zerogpu, ray_backend, ray_passes, ray_jobs), and the labs' API endpoints by name
(endpoints, services). A new kind of forward pass is registered with lm.register_pass."""
