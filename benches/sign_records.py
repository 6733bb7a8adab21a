#!/usr/bin/env python3
"""Sign the tip commit of every ref under PREFIX with the ssh key KEY, as
git-swarm signs a record (`ssh-keygen -Y sign -n git` over the commit
without its signature, in a `gpgsig` header), and move the refs to the
signed commits. For benches/scale.sh's trust rows.
Usage: sign_records.py KEY PREFIX (in the repository)"""
import subprocess
import sys

key, prefix = sys.argv[1:3]
refs = subprocess.run(["git", "for-each-ref", "--format=%(objectname) %(refname)", prefix],
                      check=True, capture_output=True, text=True).stdout.split("\n")
updates = []
for line in filter(None, refs):
    old, ref = line.split(" ", 1)
    raw = subprocess.run(["git", "cat-file", "commit", old], check=True, capture_output=True).stdout
    sig = subprocess.run(["ssh-keygen", "-Y", "sign", "-n", "git", "-f", key], input=raw,
                         check=True, capture_output=True).stdout.decode().rstrip("\n")
    head, body = raw.split(b"\n\n", 1)
    header = "gpgsig " + "\n ".join(sig.split("\n"))
    signed = head + b"\n" + header.encode() + b"\n\n" + body
    new = subprocess.run(["git", "hash-object", "-t", "commit", "-w", "--stdin"], input=signed,
                         check=True, capture_output=True).stdout.decode().strip()
    updates.append(f"update {ref} {new} {old}\n")
subprocess.run(["git", "update-ref", "--stdin"], input="".join(updates).encode(), check=True)
print(len(updates))
