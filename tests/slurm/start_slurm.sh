#!/usr/bin/env bash
# Bring up a one-node SLURM cluster on localhost (Debian slurm-wlm 22.05 + munge), as root, without systemd.
# Idempotent: installs the packages if missing, (re)writes the config, (re)starts the daemons, waits for the node.
# Used by tests/test_slurm.py; CI runs it through that test.
set -euo pipefail
if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq slurm-wlm munge >/dev/null
fi
HOST=localhost
CPUS=$(nproc)
MEM_MB=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 1024 ))
mkdir -p /etc/slurm /var/spool/slurmctld /var/spool/slurmd /var/log/slurm /run/munge /var/lib/munge /var/log/munge
cat > /etc/slurm/slurm.conf <<CONF
ClusterName=depthlab-test
SlurmctldHost=${HOST}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
ReturnToService=2
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
NodeName=${HOST} NodeAddr=127.0.0.1 CPUs=${CPUS} RealMemory=${MEM_MB} State=UNKNOWN
PartitionName=debug Nodes=${HOST} Default=YES MaxTime=INFINITE State=UP
CONF
if [ ! -s /etc/munge/munge.key ]; then
  mkdir -p /etc/munge
  dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 2>/dev/null
fi
chown -R munge:munge /etc/munge /run/munge /var/lib/munge /var/log/munge 2>/dev/null || true
chmod 400 /etc/munge/munge.key
pkill -x slurmd 2>/dev/null || true
pkill -x slurmctld 2>/dev/null || true
pgrep -x munged >/dev/null || su -s /bin/sh munge -c "/usr/sbin/munged" 2>/dev/null || /usr/sbin/munged --force
sleep 1
/usr/sbin/slurmctld -c
/usr/sbin/slurmd -c
for _ in $(seq 1 60); do
  if sinfo -h -N -o "%T" 2>/dev/null | grep -Eq "^(idle|mixed|allocated)"; then
    scontrol update nodename=${HOST} state=resume >/dev/null 2>&1 || true
    sinfo
    exit 0
  fi
  scontrol update nodename=${HOST} state=resume >/dev/null 2>&1 || true
  sleep 1
done
echo "SLURM node did not come up:" >&2
sinfo -N >&2 || true
tail -20 /var/log/slurm/slurmctld.log /var/log/slurm/slurmd.log >&2 || true
exit 1
