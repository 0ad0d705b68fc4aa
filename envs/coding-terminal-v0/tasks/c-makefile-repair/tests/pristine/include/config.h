#ifndef CONFIG_H
#define CONFIG_H

/* Number of decimals printed for every statistic. */
#define STATS_PRECISION 3

/* Lines starting with this character are comments. */
#define COMMENT_CHAR '#'

#endif
