#A hand-made UEA/UCR file for the tests: 2 dimensions of 3 steps,
#classes listed out of sorted order, comments, a blank line, a CR LF line.
@problemName Tiny
@timeStamps false
@missing false
@univariate false
@dimensions 2
@equalLength true
@seriesLength 3
@classLabel true walk run sit
@data
0.5,1,-2:3,4e-1,5:walk

1,2,3:4,5,6:run
% an ARFF-style comment
-1.25, 0 ,7:8,9,10:sit
10,20,30:40,50,60:sit
