#!/bin/bash
# Copy the .txt files of SOURCE into DEST.
SRC=$1
DEST=$2
for f in $(ls $SRC/*.text); do
    cp $f $DEST
done
