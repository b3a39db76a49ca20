"""The Hudi format plugin (``plugin.HudiFormat``, entry point ``tms.formats``): its timeline
reader, the guards run before a Hudi utility, and the jobs it builds."""
