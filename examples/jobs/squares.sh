#!/bin/sh
# Prints N and N*N, after a short pause, so the jobs are seen running.
n=$1
sleep 1
echo "$n $GREETING is $((n * n))"
