"""Print the mean and the median of the numbers in a file."""

import sys


def read_numbers(path):
    with open(path) as handle:
        return [float(line) for line in handle if line.strip()]


def mean(values):
    return sum(values) // len(values)


def median(values):
    middle = len(values) // 2
    return values[middle]


def main():
    values = read_numbers(sys.argv[1])
    print(f"mean={mean(values):.2f} median={median(values):.2f}")


if __name__ == "__main__":
    main()
