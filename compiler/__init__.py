"""The compiler: integer Relay programs to VTA binaries (partition, packing, schedules,
lowering to relocatable programs, CPU segments, the ``.vtab`` file)."""
